//! How many threads a parallel call uses: one rule for every evaluator. `None` runs on rayon's
//! global pool (every core); `Some(n)` on a pool of `n` threads made for the call. Results never
//! depend on it: every parallel loop of the core gives item `i` its own stream.

use crate::error::Result;
use crate::invalid;

/// Runs `work` on `threads` threads (see the module docs); 0 threads is an error.
pub fn install<T: Send>(threads: Option<usize>, work: impl FnOnce() -> T + Send) -> Result<T> {
    match threads {
        None => Ok(work()),
        Some(0) => Err(invalid!("threads must be >= 1 (or None for every core), got 0")),
        Some(n) => Ok(rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            // Named, so that `top -H` and /proc show whose threads they are.
            .thread_name(|i| format!("bbrl-worker-{i}"))
            .build()
            .map_err(|e| invalid!("cannot start {n} worker threads: {e}"))?
            .install(work)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_on_the_threads_asked_for_and_refuses_zero() {
        assert_eq!(install(Some(3), rayon::current_num_threads).unwrap(), 3);
        assert_eq!(install(None, || 7).unwrap(), 7);
        assert!(install(Some(0), || ()).unwrap_err().to_string().contains("threads must be >= 1"));
    }
}
