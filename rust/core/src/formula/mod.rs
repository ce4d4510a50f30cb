//! The formula language of the Formula agent and OPPS-DS (SPEC 4.9.1).
//!
//! A formula is a token sequence in reverse Polish notation (RPN), written with space-separated
//! symbols, e.g. `X2 X0 DIV`. Variables `X0 = QMean`, `X1 = QSelf`, `X2 = QUniform`; unary `ABS`,
//! `LN`, `SQRT`, `INV` (1/x), `OPP` (-x); binary `SUB`, `DIV`, `ADD2`, `MUL2`, `MIN2`, `MAX2`;
//! and finite numeric constants. `a b SUB = a - b` and `a b DIV = a / b` (the usual RPN meaning:
//! the original's `operands[0]` is the top of the stack).
//!
//! Evaluation runs on a fixed-size stack (no allocation). `LN` of a value <= 0, `SQRT` of a
//! value < 0, `INV(0)` and a division by 0 are typed [`EvalError`]s, as the original's
//! `TokenException`s; infinite and NaN results are not errors (as in the original).
//!
//! [`Formula::to_infix`] renders a readable form (`max(QMean, |QUniform|)`, `1/QSelf`,
//! `QMean - QSelf`, ...) and [`Formula::parse_infix`] reads it back to the same RPN;
//! [`Formula::parse_any`] accepts both. The paper writes the variables Q0 = QUniform (X2),
//! Q1 = QSelf (X1), Q2 = QMean (X0): those names are read and written only under
//! [`VariableNames::Paper`] (docs/formulas.md gives the evidence for the mapping).

mod infix;
pub mod set;

use std::fmt;

use thiserror::Error;

use crate::error::BbrlError;

pub use set::{
    formula_set, formula_set_with_stats, parse_formula_list, shipped_set, FormulaSetStats, GENERATION_TOKENS,
};

/// Number of variables (X0 = QMean, X1 = QSelf, X2 = QUniform).
pub const N_VARIABLES: usize = 3;

/// How the infix form names the three variables (RPN always says X0, X1, X2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum VariableNames {
    /// `QMean` (X0), `QSelf` (X1), `QUniform` (X2); `X0`..`X2` are also read. `Q0`..`Q2` are
    /// refused as ambiguous, with an error that names the spelling to use.
    #[default]
    Bbrl,
    /// The paper's `Q0` = QUniform (X2), `Q1` = QSelf (X1), `Q2` = QMean (X0); the names of
    /// [`VariableNames::Bbrl`] are also read.
    Paper,
}

/// The deepest stack a formula may need: evaluation uses a fixed array of this size.
pub const MAX_STACK: usize = 64;

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unary {
    /// |x|
    Abs,
    /// ln(x); an error for x <= 0.
    Ln,
    /// sqrt(x); an error for x < 0.
    Sqrt,
    /// 1/x; an error for x == 0.
    Inv,
    /// -x
    Opp,
}

/// Binary operators; `a b OP` applies `OP(a, b)` with `b` the top of the stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Binary {
    /// a - b
    Sub,
    /// a / b; an error for b == 0.
    Div,
    /// a + b
    Add2,
    /// a * b
    Mul2,
    /// min(a, b): `a` if `a < b`, else `b` (the original's `search::min` over [b, a]).
    Min2,
    /// max(a, b): `a` if `a > b`, else `b`.
    Max2,
}

/// One RPN token.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Token {
    /// Variable `X<i>`, i < [`N_VARIABLES`].
    Var(u8),
    /// A finite numeric constant.
    Const(f64),
    Unary(Unary),
    Binary(Binary),
}

/// An evaluation error (the original throws a `TokenException`).
#[derive(Clone, Copy, Debug, PartialEq, Error)]
pub enum EvalError {
    #[error("LN of {value} (the argument must be > 0)")]
    LnOfNonPositive { value: f64 },
    #[error("SQRT of {value} (the argument must be >= 0)")]
    SqrtOfNegative { value: f64 },
    #[error("INV of 0")]
    InvOfZero,
    #[error("DIV by 0")]
    DivByZero,
}

/// Why a text is not a formula.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum FormulaError {
    #[error("empty formula")]
    Empty,
    #[error(
        "unknown token '{token}' at position {position} (known: X0 X1 X2, ABS LN SQRT INV OPP, \
         SUB DIV ADD2 MUL2 MIN2 MAX2, finite numbers)"
    )]
    UnknownToken { token: String, position: usize },
    #[error("constant '{token}' at position {position} is not finite")]
    NonFiniteConstant { token: String, position: usize },
    #[error("token '{token}' at position {position} needs {arity} operand(s) but the stack holds {height}")]
    StackUnderflow { token: String, position: usize, arity: usize, height: usize },
    #[error("the formula leaves {height} values on the stack; a valid formula leaves exactly 1")]
    Unbalanced { height: usize },
    #[error("the formula needs a stack deeper than {MAX_STACK}")]
    TooDeep,
    #[error("infix formula, at character {position}: {message}")]
    Infix { message: String, position: usize },
    #[error("not a formula: as RPN: {rpn}; as infix: {infix}")]
    Neither { rpn: Box<FormulaError>, infix: Box<FormulaError> },
}

impl From<FormulaError> for BbrlError {
    fn from(e: FormulaError) -> Self {
        BbrlError::InvalidArgument(format!("invalid formula: {e}"))
    }
}

impl Unary {
    pub const ALL: [Unary; 5] = [Unary::Abs, Unary::Ln, Unary::Sqrt, Unary::Inv, Unary::Opp];

    pub fn symbol(self) -> &'static str {
        match self {
            Unary::Abs => "ABS",
            Unary::Ln => "LN",
            Unary::Sqrt => "SQRT",
            Unary::Inv => "INV",
            Unary::Opp => "OPP",
        }
    }

    /// Applies the operator, with the original's error conditions (NaN passes through).
    #[inline]
    pub fn apply(self, v: f64) -> Result<f64, EvalError> {
        match self {
            Unary::Abs => Ok(v.abs()),
            Unary::Ln => {
                if v <= 0.0 {
                    Err(EvalError::LnOfNonPositive { value: v })
                } else {
                    Ok(v.ln())
                }
            }
            Unary::Sqrt => {
                if v < 0.0 {
                    Err(EvalError::SqrtOfNegative { value: v })
                } else {
                    Ok(v.sqrt())
                }
            }
            Unary::Inv => {
                if v == 0.0 {
                    Err(EvalError::InvOfZero)
                } else {
                    Ok(1.0 / v)
                }
            }
            Unary::Opp => Ok(-v),
        }
    }
}

impl Binary {
    pub const ALL: [Binary; 6] = [Binary::Sub, Binary::Div, Binary::Add2, Binary::Mul2, Binary::Min2, Binary::Max2];

    pub fn symbol(self) -> &'static str {
        match self {
            Binary::Sub => "SUB",
            Binary::Div => "DIV",
            Binary::Add2 => "ADD2",
            Binary::Mul2 => "MUL2",
            Binary::Min2 => "MIN2",
            Binary::Max2 => "MAX2",
        }
    }

    /// `OP(a, b)` where `b` is the top of the stack (the original's `operands[0]`).
    #[inline]
    pub fn apply(self, a: f64, b: f64) -> Result<f64, EvalError> {
        match self {
            Binary::Sub => Ok(a - b),
            Binary::Div => {
                if b == 0.0 {
                    Err(EvalError::DivByZero)
                } else {
                    Ok(a / b)
                }
            }
            Binary::Add2 => Ok(b + a),
            Binary::Mul2 => Ok(b * a),
            Binary::Min2 => Ok(if a < b { a } else { b }),
            Binary::Max2 => Ok(if a > b { a } else { b }),
        }
    }
}

impl Token {
    /// Number of operands popped.
    #[inline]
    pub fn arity(self) -> usize {
        match self {
            Token::Var(_) | Token::Const(_) => 0,
            Token::Unary(_) => 1,
            Token::Binary(_) => 2,
        }
    }

    /// Reads one RPN symbol (`position` only names it in errors).
    pub fn parse(symbol: &str, position: usize) -> Result<Token, FormulaError> {
        let unknown = || FormulaError::UnknownToken { token: symbol.to_string(), position };
        if let Some(u) = Unary::ALL.iter().find(|u| u.symbol() == symbol) {
            return Ok(Token::Unary(*u));
        }
        if let Some(b) = Binary::ALL.iter().find(|b| b.symbol() == symbol) {
            return Ok(Token::Binary(*b));
        }
        if let Some(index) = symbol.strip_prefix('X') {
            return match index.parse::<u8>() {
                Ok(i) if (i as usize) < N_VARIABLES && index == i.to_string() => Ok(Token::Var(i)),
                _ => Err(unknown()),
            };
        }
        let starts_numeric = symbol.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '.' || c == '+');
        match symbol.parse::<f64>() {
            Ok(v) if starts_numeric && v.is_finite() => Ok(Token::Const(v)),
            Ok(_) if starts_numeric => Err(FormulaError::NonFiniteConstant { token: symbol.to_string(), position }),
            _ => Err(unknown()),
        }
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Var(i) => write!(f, "X{i}"),
            // Rust prints the shortest text that parses back to the same double.
            Token::Const(v) => write!(f, "{v}"),
            Token::Unary(u) => f.write_str(u.symbol()),
            Token::Binary(b) => f.write_str(b.symbol()),
        }
    }
}

/// A valid RPN formula over the variables X0, X1, X2.
#[derive(Clone, Debug, PartialEq)]
pub struct Formula {
    tokens: Vec<Token>,
    used: [bool; N_VARIABLES],
}

/// Checks the stack-height rule of SPEC 4.9.1: `h += 1 - arity` never drops below 1 after a token
/// and ends at exactly 1. Returns the deepest stack.
fn check_tokens(tokens: &[Token]) -> Result<usize, FormulaError> {
    if tokens.is_empty() {
        return Err(FormulaError::Empty);
    }
    let mut height = 0usize;
    let mut deepest = 0usize;
    for (position, t) in tokens.iter().enumerate() {
        let arity = t.arity();
        if height < arity {
            return Err(FormulaError::StackUnderflow { token: t.to_string(), position, arity, height });
        }
        height = height + 1 - arity;
        deepest = deepest.max(height);
        if deepest > MAX_STACK {
            return Err(FormulaError::TooDeep);
        }
    }
    if height != 1 {
        return Err(FormulaError::Unbalanced { height });
    }
    Ok(deepest)
}

impl Formula {
    /// A formula from tokens; invalid sequences and non-finite constants are errors.
    pub fn new(tokens: Vec<Token>) -> Result<Self, FormulaError> {
        check_tokens(&tokens)?;
        let mut used = [false; N_VARIABLES];
        for (position, t) in tokens.iter().enumerate() {
            match *t {
                Token::Var(i) if (i as usize) < N_VARIABLES => used[i as usize] = true,
                Token::Var(_) => return Err(FormulaError::UnknownToken { token: t.to_string(), position }),
                Token::Const(v) if !v.is_finite() => {
                    return Err(FormulaError::NonFiniteConstant { token: t.to_string(), position })
                }
                _ => {}
            }
        }
        Ok(Self { tokens, used })
    }

    /// Reads an RPN formula: space-separated symbols, e.g. `X2 X0 DIV`.
    pub fn parse_rpn(text: &str) -> Result<Self, FormulaError> {
        let tokens = text.split_whitespace().enumerate().map(|(i, s)| Token::parse(s, i)).collect::<Result<_, _>>()?;
        Self::new(tokens)
    }

    /// Reads the infix form of [`Formula::to_infix`] (see the `infix` module for the grammar),
    /// with bbrl's variable names.
    pub fn parse_infix(text: &str) -> Result<Self, FormulaError> {
        infix::parse(text, VariableNames::Bbrl)
    }

    /// Reads the infix form with the variable names of `names`.
    pub fn parse_infix_with(text: &str, names: VariableNames) -> Result<Self, FormulaError> {
        infix::parse(text, names)
    }

    /// Reads either form: RPN first, then infix; if both fail, the error gives both reasons.
    pub fn parse_any(text: &str) -> Result<Self, FormulaError> {
        Self::parse_any_with(text, VariableNames::Bbrl)
    }

    /// Reads either form, infix with the variable names of `names` (RPN is always X0, X1, X2).
    pub fn parse_any_with(text: &str, names: VariableNames) -> Result<Self, FormulaError> {
        match Self::parse_rpn(text) {
            Ok(f) => Ok(f),
            Err(rpn) => match Self::parse_infix_with(text, names) {
                Ok(f) => Ok(f),
                Err(infix) => {
                    if matches!(rpn, FormulaError::Empty) {
                        Err(FormulaError::Empty)
                    } else {
                        Err(FormulaError::Neither { rpn: Box::new(rpn), infix: Box::new(infix) })
                    }
                }
            },
        }
    }

    pub fn tokens(&self) -> &[Token] {
        &self.tokens
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Always false: a valid formula has at least one token.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Whether variable `X<i>` appears in the formula.
    pub fn uses(&self, variable: usize) -> bool {
        self.used.get(variable).copied().unwrap_or(false)
    }

    /// The RPN text (space-separated symbols).
    pub fn to_rpn(&self) -> String {
        self.to_string()
    }

    /// The readable infix form with bbrl's variable names, e.g. `max(QMean, |QUniform|)`.
    pub fn to_infix(&self) -> String {
        infix::render(&self.tokens, VariableNames::Bbrl)
    }

    /// The infix form with the variable names of `names`, e.g. `max(Q2, |Q0|)` for the paper's.
    pub fn to_infix_with(&self, names: VariableNames) -> String {
        infix::render(&self.tokens, names)
    }

    /// Evaluates the formula at `x = (X0, X1, X2)` on a fixed-size stack (no allocation).
    #[inline]
    pub fn eval(&self, x: [f64; N_VARIABLES]) -> Result<f64, EvalError> {
        let mut stack = [0.0f64; MAX_STACK];
        let mut h = 0usize;
        for t in &self.tokens {
            match *t {
                Token::Var(i) => {
                    stack[h] = x[i as usize];
                    h += 1;
                }
                Token::Const(v) => {
                    stack[h] = v;
                    h += 1;
                }
                Token::Unary(u) => stack[h - 1] = u.apply(stack[h - 1])?,
                Token::Binary(b) => {
                    stack[h - 2] = b.apply(stack[h - 2], stack[h - 1])?;
                    h -= 1;
                }
            }
        }
        Ok(stack[0])
    }
}

impl fmt::Display for Formula {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.tokens.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Formula {
    type Err = FormulaError;
    /// RPN or infix ([`Formula::parse_any`]).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse_any(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(text: &str) -> Formula {
        Formula::parse_rpn(text).unwrap()
    }

    #[test]
    fn evaluates_in_rpn_order() {
        let x = [3.0, 2.0, 8.0];
        assert_eq!(f("X0 X1 SUB").eval(x), Ok(1.0));
        assert_eq!(f("X2 X1 DIV").eval(x), Ok(4.0));
        assert_eq!(f("X0 X1 ADD2 X2 MUL2").eval(x), Ok(40.0));
        assert_eq!(f("X0 X1 MIN2").eval(x), Ok(2.0));
        assert_eq!(f("X0 X1 MAX2").eval(x), Ok(3.0));
        assert_eq!(f("X0 OPP ABS").eval(x), Ok(3.0));
        assert_eq!(f("X2 INV").eval(x), Ok(0.125));
        assert_eq!(f("X2 SQRT X2 SQRT MUL2").eval(x), Ok(8.000000000000002));
        assert_eq!(f("X1 LN").eval(x), Ok(2f64.ln()));
        assert_eq!(f("2.5 X1 MUL2 -1 ADD2").eval(x), Ok(4.0));
        assert_eq!(f("X0").to_string(), "X0");
        assert_eq!(f("  X2   X0 DIV ").to_string(), "X2 X0 DIV");
        assert!(f("X2 X0 DIV").uses(0) && f("X2 X0 DIV").uses(2) && !f("X2 X0 DIV").uses(1));
    }

    #[test]
    fn evaluation_errors_are_typed() {
        let x = [0.0, -1.0, 2.0];
        assert_eq!(f("X1 LN").eval(x), Err(EvalError::LnOfNonPositive { value: -1.0 }));
        assert_eq!(f("X0 LN").eval(x), Err(EvalError::LnOfNonPositive { value: 0.0 }));
        assert_eq!(f("X1 SQRT").eval(x), Err(EvalError::SqrtOfNegative { value: -1.0 }));
        assert_eq!(f("X0 SQRT").eval(x), Ok(0.0));
        assert_eq!(f("X0 INV").eval(x), Err(EvalError::InvOfZero));
        assert_eq!(f("X2 X0 DIV").eval(x), Err(EvalError::DivByZero));
        assert_eq!(f("X0 X2 DIV").eval(x), Ok(0.0));
        // Inf and NaN are not errors (as the original).
        assert_eq!(f("1e300 1e300 MUL2").eval(x), Ok(f64::INFINITY));
        assert!(f("1e300 1e300 MUL2 1e300 1e300 MUL2 SUB").eval(x).unwrap().is_nan());
        // The original's search::min/max: the top operand unless the lower one is strictly better.
        let nan = [f64::NAN, 1.0, 0.0];
        assert!(f("X1 X0 MIN2").eval(nan).unwrap().is_nan());
        assert_eq!(f("X0 X1 MIN2").eval(nan), Ok(1.0));
        assert!(f("X1 X0 MAX2").eval(nan).unwrap().is_nan());
        assert_eq!(f("X0 X1 MAX2").eval(nan), Ok(1.0));
    }

    #[test]
    fn invalid_formulas_name_the_problem() {
        let e = Formula::parse_rpn("X0 SUB").unwrap_err();
        assert!(e.to_string().contains("'SUB' at position 1 needs 2"), "{e}");
        let e = Formula::parse_rpn("X0 X1").unwrap_err();
        assert!(e.to_string().contains("leaves 2 values"), "{e}");
        let e = Formula::parse_rpn("X0 FOO ABS").unwrap_err();
        assert!(e.to_string().contains("unknown token 'FOO' at position 1"), "{e}");
        let e = Formula::parse_rpn("X3").unwrap_err();
        assert!(e.to_string().contains("'X3'"), "{e}");
        let e = Formula::parse_rpn("X0 ADD3").unwrap_err();
        assert!(e.to_string().contains("'ADD3'"), "{e}");
        let e = Formula::parse_rpn("inf").unwrap_err();
        assert!(e.to_string().contains("'inf'"), "{e}");
        let e = Formula::parse_rpn("X0 1e999 ADD2").unwrap_err();
        assert!(e.to_string().contains("not finite"), "{e}");
        assert_eq!(Formula::parse_rpn("  ").unwrap_err(), FormulaError::Empty);
        assert_eq!(Formula::parse_any("").unwrap_err(), FormulaError::Empty);
        let e = Formula::parse_any("X0 X1 FOO").unwrap_err();
        assert!(e.to_string().contains("as RPN: unknown token 'FOO'"), "{e}");
        let e: BbrlError = Formula::parse_rpn("ABS").unwrap_err().into();
        assert!(matches!(e, BbrlError::InvalidArgument(_)), "{e}");
        let deep = vec!["X0"; MAX_STACK + 1].join(" ") + &" ADD2".repeat(MAX_STACK);
        assert_eq!(Formula::parse_rpn(&deep).unwrap_err(), FormulaError::TooDeep);
    }

    #[test]
    fn parse_any_reads_both_forms() {
        assert_eq!(Formula::parse_any("X2 X0 DIV").unwrap(), f("X2 X0 DIV"));
        assert_eq!(Formula::parse_any("QUniform / QMean").unwrap(), f("X2 X0 DIV"));
        assert_eq!("max(QMean, |QUniform|)".parse::<Formula>().unwrap(), f("X0 X2 ABS MAX2"));
        assert_eq!(Formula::parse_any_with("Q0 / Q2", VariableNames::Paper).unwrap(), f("X2 X0 DIV"));
        let e = Formula::parse_any("Q2 / Q0").unwrap_err();
        assert!(e.to_string().contains("'Q2' is ambiguous"), "{e}");
    }
}
