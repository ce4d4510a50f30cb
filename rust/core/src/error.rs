//! One error type for the whole core; the bindings map its variants to Python exceptions.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum BbrlError {
    /// A parameter, array or file content that cannot be used (Python: `ValueError`).
    #[error("{0}")]
    InvalidArgument(String),
    /// An agent failed while running (Python: `RuntimeError`), located by MDP index and step.
    #[error("agent '{agent}' failed on MDP {mdp} at step {step}: {message}")]
    AgentFailure { agent: String, mdp: usize, step: usize, message: String },
    /// An agent-level error before it is located in a run (e.g. a formula that cannot be evaluated).
    #[error("{0}")]
    Agent(String),
    /// The run was cancelled from outside (Ctrl-C in the CLI).
    #[error("run cancelled")]
    Cancelled,
}

pub type Result<T> = std::result::Result<T, BbrlError>;

/// The indices `0..n` as every message states them: "0 to n - 1", both ends included.
pub fn index_range(n: usize) -> String {
    match n {
        0 => "none (there are none)".to_string(),
        _ => format!("0 to {}", n - 1),
    }
}

/// Shorthand for an [`BbrlError::InvalidArgument`] with a formatted message.
#[macro_export]
macro_rules! invalid {
    ($($arg:tt)*) => { $crate::error::BbrlError::InvalidArgument(format!($($arg)*)) };
}
