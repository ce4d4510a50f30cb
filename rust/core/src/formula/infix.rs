//! The readable infix form of a formula, and its parser back to RPN.
//!
//! Rendering: the variables by name (`QMean` = X0, `QSelf` = X1, `QUniform` = X2, or under
//! [`VariableNames::Paper`] the paper's `Q2`, `Q1`, `Q0`, in that order: see docs/formulas.md),
//! `|a|`, `ln(a)`, `sqrt(a)`, `1/a` (INV), `-a` (OPP), `a - b`, `a / b`, `a + b`, `a * b`,
//! `min(a, b)`, `max(a, b)`, numbers as Rust prints them (shortest exact form).
//!
//! Grammar (whitespace is free except where noted):
//! ```text
//! expr   := term (('+' | '-') term)*          left-associative: a - b - c = (a - b) - c
//! term   := prefix (('*' | '/') prefix)*      left-associative
//! prefix := '-' prefix                        OPP
//!         | '1/' prefix                       INV: the literal "1/" with no space between 1 and /
//!         | atom
//! atom   := number | '-'number                "-3" (no space) is the constant -3; "-(3)" is OPP 3
//!         | QMean | QSelf | QUniform | X0 | X1 | X2      (names of any case)
//!         | Q0 | Q1 | Q2                             only under VariableNames::Paper
//!         | '(' expr ')' | '|' expr '|'
//!         | ln(expr) | sqrt(expr) | abs(expr) | inv(expr) | min(expr, expr) | max(expr, expr)
//! ```
//! So `1/QSelf` is `X1 INV` while `1 / QSelf` is `1 X1 DIV`. Prefix operators bind tighter than
//! `*`; the renderer adds the parentheses that make every formula read back to the same RPN
//! tokens (`a - (b - c)`, `(-QMean) * QSelf`, `QMean + (1/QSelf)`), which the round-trip property
//! test checks.
//!
//! `Q0`, `Q1`, `Q2` are refused under bbrl's names: the paper numbers the variables in the other
//! order (its Q0 is QUniform), and bbrl's infix once read `Q0` as QMean, so a bare `Q0` is
//! ambiguous; the error names the unambiguous spelling.

use super::{Binary, Formula, FormulaError, Token, Unary, VariableNames};

/// bbrl's names of X0, X1, X2.
const BBRL_NAMES: [&str; 3] = ["QMean", "QSelf", "QUniform"];
/// The paper's names of X0, X1, X2: its Q0 is QUniform, its Q2 QMean.
const PAPER_NAMES: [&str; 3] = ["Q2", "Q1", "Q0"];

impl VariableNames {
    /// The names of X0, X1, X2 in this convention.
    fn of_variables(self) -> [&'static str; 3] {
        match self {
            VariableNames::Bbrl => BBRL_NAMES,
            VariableNames::Paper => PAPER_NAMES,
        }
    }
}

enum Node {
    Var(u8),
    Const(f64),
    Un(Unary, Box<Node>),
    Bin(Binary, Box<Node>, Box<Node>),
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Add,
    Mul,
    Prefix,
    Atom,
}

fn level(node: &Node) -> Level {
    match node {
        Node::Var(_) => Level::Atom,
        Node::Const(v) => {
            if v.is_sign_negative() {
                Level::Prefix
            } else {
                Level::Atom
            }
        }
        Node::Un(Unary::Opp | Unary::Inv, _) => Level::Prefix,
        Node::Un(_, _) => Level::Atom,
        Node::Bin(Binary::Min2 | Binary::Max2, _, _) => Level::Atom,
        Node::Bin(Binary::Mul2 | Binary::Div, _, _) => Level::Mul,
        Node::Bin(Binary::Add2 | Binary::Sub, _, _) => Level::Add,
    }
}

fn tree(tokens: &[Token]) -> Node {
    let mut stack: Vec<Node> = Vec::new();
    for t in tokens {
        let node = match *t {
            Token::Var(i) => Node::Var(i),
            Token::Const(v) => Node::Const(v),
            Token::Unary(u) => {
                let a = stack.pop().expect("valid formula");
                Node::Un(u, Box::new(a))
            }
            Token::Binary(b) => {
                let top = stack.pop().expect("valid formula");
                let lower = stack.pop().expect("valid formula");
                Node::Bin(b, Box::new(lower), Box::new(top))
            }
        };
        stack.push(node);
    }
    stack.pop().expect("valid formula")
}

fn paren(s: String, wrap: bool) -> String {
    if wrap {
        format!("({s})")
    } else {
        s
    }
}

fn show(node: &Node, names: [&str; 3]) -> String {
    let show = |node: &Node| show(node, names);
    match node {
        Node::Var(i) => names[*i as usize].to_string(),
        Node::Const(v) => format!("{v}"),
        Node::Un(u, a) => {
            let inner = show(a);
            match u {
                Unary::Abs => format!("|{inner}|"),
                Unary::Ln => format!("ln({inner})"),
                Unary::Sqrt => format!("sqrt({inner})"),
                Unary::Opp | Unary::Inv => {
                    // Bare only for variables and function-like atoms: "-3" would be a constant.
                    let bare = matches!(**a, Node::Var(_) | Node::Un(Unary::Abs | Unary::Ln | Unary::Sqrt, _))
                        || matches!(**a, Node::Bin(Binary::Min2 | Binary::Max2, _, _));
                    let prefix = if *u == Unary::Opp { "-" } else { "1/" };
                    format!("{prefix}{}", paren(inner, !bare))
                }
            }
        }
        Node::Bin(b, l, r) => {
            let (ls, rs) = (show(l), show(r));
            let symbol = match b {
                Binary::Min2 => return format!("min({ls}, {rs})"),
                Binary::Max2 => return format!("max({ls}, {rs})"),
                Binary::Add2 => "+",
                Binary::Sub => "-",
                Binary::Mul2 => "*",
                Binary::Div => "/",
            };
            let op = level(node);
            let wrap = |child: &Node, right: bool| match level(child) {
                Level::Atom => false,
                Level::Prefix => op == Level::Mul || right,
                cl => cl < op || (right && cl == op),
            };
            format!("{} {symbol} {}", paren(ls, wrap(l, false)), paren(rs, wrap(r, true)))
        }
    }
}

/// The infix text of a valid token sequence, with the variables named as `names` says.
pub(super) fn render(tokens: &[Token], names: VariableNames) -> String {
    show(&tree(tokens), names.of_variables())
}

struct Parser<'a> {
    text: &'a [u8],
    pos: usize,
    out: Vec<Token>,
    names: VariableNames,
}

type Parsed = Result<(), FormulaError>;

impl Parser<'_> {
    fn error(&self, message: impl Into<String>) -> FormulaError {
        FormulaError::Infix { message: message.into(), position: self.pos }
    }

    fn skip_ws(&mut self) {
        while self.pos < self.text.len() && self.text[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.text.get(self.pos).copied()
    }

    fn describe(&self) -> String {
        match self.text.get(self.pos) {
            Some(&c) if c.is_ascii_graphic() => format!("'{}'", c as char),
            Some(_) => "a non-ASCII or control character".into(),
            None => "the end of the text".into(),
        }
    }

    fn expect(&mut self, c: u8) -> Parsed {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(format!("expected '{}', found {}", c as char, self.describe())))
        }
    }

    fn expr(&mut self) -> Parsed {
        self.term()?;
        loop {
            let op = match self.peek() {
                Some(b'+') => Binary::Add2,
                Some(b'-') => Binary::Sub,
                _ => return Ok(()),
            };
            self.pos += 1;
            self.term()?;
            self.out.push(Token::Binary(op));
        }
    }

    fn term(&mut self) -> Parsed {
        self.prefix()?;
        loop {
            let op = match self.peek() {
                Some(b'*') => Binary::Mul2,
                Some(b'/') => Binary::Div,
                _ => return Ok(()),
            };
            self.pos += 1;
            self.prefix()?;
            self.out.push(Token::Binary(op));
        }
    }

    fn prefix(&mut self) -> Parsed {
        let next = |p: &Self, k: usize| p.text.get(p.pos + k).copied();
        match self.peek() {
            Some(b'-') if !matches!(next(self, 1), Some(c) if c.is_ascii_digit() || c == b'.') => {
                self.pos += 1;
                self.prefix()?;
                self.out.push(Token::Unary(Unary::Opp));
                Ok(())
            }
            Some(b'1') if next(self, 1) == Some(b'/') => {
                self.pos += 2;
                self.prefix()?;
                self.out.push(Token::Unary(Unary::Inv));
                Ok(())
            }
            _ => self.atom(),
        }
    }

    fn number(&mut self) -> Parsed {
        let start = self.pos;
        let digits = |p: &mut Self| {
            while p.pos < p.text.len() && p.text[p.pos].is_ascii_digit() {
                p.pos += 1;
            }
        };
        if self.text[self.pos] == b'-' {
            self.pos += 1;
        }
        digits(self);
        if self.text.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            digits(self);
        }
        if matches!(self.text.get(self.pos), Some(b'e' | b'E')) {
            self.pos += 1;
            if matches!(self.text.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            digits(self);
        }
        let literal = std::str::from_utf8(&self.text[start..self.pos]).unwrap_or("");
        match literal.parse::<f64>() {
            Ok(v) if v.is_finite() => {
                self.out.push(Token::Const(v));
                Ok(())
            }
            Ok(_) => {
                Err(FormulaError::Infix { message: format!("constant '{literal}' is not finite"), position: start })
            }
            Err(_) => Err(FormulaError::Infix { message: format!("malformed number '{literal}'"), position: start }),
        }
    }

    fn atom(&mut self) -> Parsed {
        let Some(c) = self.peek() else {
            return Err(self.error("expected an operand, found the end of the text"));
        };
        match c {
            b'0'..=b'9' | b'.' | b'-' => self.number(),
            b'(' => {
                self.pos += 1;
                self.expr()?;
                self.expect(b')')
            }
            b'|' => {
                self.pos += 1;
                self.expr()?;
                self.expect(b'|')?;
                self.out.push(Token::Unary(Unary::Abs));
                Ok(())
            }
            c if c.is_ascii_alphabetic() => {
                let start = self.pos;
                while self.pos < self.text.len()
                    && (self.text[self.pos].is_ascii_alphanumeric() || self.text[self.pos] == b'_')
                {
                    self.pos += 1;
                }
                let written = String::from_utf8_lossy(&self.text[start..self.pos]).into_owned();
                let name = written.to_ascii_lowercase();
                let unknown = || FormulaError::Infix {
                    message: format!(
                        "unknown name '{written}' (variables QMean QSelf QUniform or X0 X1 X2; \
                         functions ln sqrt abs inv min max)"
                    ),
                    position: start,
                };
                let paper = |index: u8| match self.names {
                    VariableNames::Paper => Ok(Token::Var(index)),
                    VariableNames::Bbrl => Err(FormulaError::Infix {
                        message: format!(
                            "'{written}' is ambiguous: the paper's {written} is {} (X{index}), while bbrl's infix \
                             once read Q0, Q1, Q2 as X0, X1, X2; write {} (or X{index}) for the paper's meaning, \
                             or parse with the paper's names (paper_names=True, --paper-names)",
                            BBRL_NAMES[index as usize], BBRL_NAMES[index as usize]
                        ),
                        position: start,
                    }),
                };
                match name.as_str() {
                    "qmean" | "x0" => self.out.push(Token::Var(0)),
                    "qself" | "x1" => self.out.push(Token::Var(1)),
                    "quniform" | "x2" => self.out.push(Token::Var(2)),
                    // The paper's numbering (docs/formulas.md): Q0 = QUniform, Q2 = QMean.
                    "q0" => self.out.push(paper(2)?),
                    "q1" => self.out.push(paper(1)?),
                    "q2" => self.out.push(paper(0)?),
                    "ln" | "sqrt" | "abs" | "inv" => {
                        let u = match name.as_str() {
                            "ln" => Unary::Ln,
                            "sqrt" => Unary::Sqrt,
                            "abs" => Unary::Abs,
                            _ => Unary::Inv,
                        };
                        self.expect(b'(')?;
                        self.expr()?;
                        self.expect(b')')?;
                        self.out.push(Token::Unary(u));
                    }
                    "min" | "max" => {
                        self.expect(b'(')?;
                        self.expr()?;
                        self.expect(b',')?;
                        self.expr()?;
                        self.expect(b')')?;
                        self.out.push(Token::Binary(if name == "min" { Binary::Min2 } else { Binary::Max2 }));
                    }
                    _ => return Err(unknown()),
                }
                Ok(())
            }
            _ => Err(self.error(format!("expected an operand, found {}", self.describe()))),
        }
    }
}

/// Parses the infix form into a formula, reading variable names as `names` says.
pub(super) fn parse(text: &str, names: VariableNames) -> Result<Formula, FormulaError> {
    let mut p = Parser { text: text.as_bytes(), pos: 0, out: Vec::new(), names };
    if p.peek().is_none() {
        return Err(FormulaError::Empty);
    }
    p.expr()?;
    if p.peek().is_some() {
        return Err(p.error(format!("unexpected {} after a complete formula", p.describe())));
    }
    Formula::new(p.out)
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use proptest::prelude::*;

    fn rpn(text: &str) -> Formula {
        Formula::parse_rpn(text).unwrap()
    }

    #[test]
    fn renders_readably() {
        for (r, i) in [
            ("X0 X2 ABS MAX2", "max(QMean, |QUniform|)"),
            ("X1 INV", "1/QSelf"),
            ("X0 OPP", "-QMean"),
            ("X0 LN", "ln(QMean)"),
            ("X0 SQRT", "sqrt(QMean)"),
            ("X0 X1 SUB", "QMean - QSelf"),
            ("X0 X1 DIV", "QMean / QSelf"),
            ("X0 X1 ADD2", "QMean + QSelf"),
            ("X0 X1 MUL2", "QMean * QSelf"),
            ("X0 X1 MIN2", "min(QMean, QSelf)"),
            ("1 X1 DIV", "1 / QSelf"),
            ("X0 X1 X2 SUB SUB", "QMean - (QSelf - QUniform)"),
            ("X0 X1 SUB X2 SUB", "QMean - QSelf - QUniform"),
            ("X0 X1 ADD2 X2 MUL2", "(QMean + QSelf) * QUniform"),
            ("X0 X1 X2 MUL2 ADD2", "QMean + QSelf * QUniform"),
            ("X0 OPP X1 MUL2", "(-QMean) * QSelf"),
            ("X0 OPP X1 ADD2", "-QMean + QSelf"),
            ("X1 X0 OPP ADD2", "QSelf + (-QMean)"),
            ("X0 X1 ADD2 INV", "1/(QMean + QSelf)"),
            ("X0 OPP OPP", "-(-QMean)"),
            ("X0 INV ABS", "|1/QMean|"),
            ("3 OPP", "-(3)"),
            ("-3", "-3"),
            ("X0 -2.5 SUB", "QMean - (-2.5)"),
            ("X2 X2 DIV", "QUniform / QUniform"),
        ] {
            let f = rpn(r);
            assert_eq!(f.to_infix(), i, "{r}");
            assert_eq!(Formula::parse_infix(i).unwrap(), f, "{i}");
        }
    }

    #[test]
    fn the_papers_names_map_q0_to_quniform_and_q2_to_qmean() {
        // The mapping of docs/formulas.md: paper Q0 = X2 (QUniform), Q1 = X1 (QSelf), Q2 = X0 (QMean).
        let paper = VariableNames::Paper;
        for (text, expected) in [
            ("Q0", "X2"),
            ("Q1", "X1"),
            ("Q2", "X0"),
            ("Q2 / Q0", "X0 X2 DIV"),
            ("max(Q1, Q2) - Q0", "X1 X0 MAX2 X2 SUB"),
            ("q0 * QMean", "X2 X0 MUL2"),
        ] {
            assert_eq!(Formula::parse_infix_with(text, paper).unwrap(), rpn(expected), "{text}");
        }
        assert_eq!(rpn("X0 X2 DIV").to_infix_with(paper), "Q2 / Q0");
        assert_eq!(rpn("X1 INV X2 MAX2").to_infix_with(paper), "max(1/Q1, Q0)");
        assert_eq!(rpn("X1 INV X2 MAX2").to_infix_with(VariableNames::Bbrl), "max(1/QSelf, QUniform)");
    }

    #[test]
    fn bare_q_numbers_are_refused_under_bbrls_names_with_the_new_spelling() {
        for (text, position, spelling) in
            [("Q0", 0, "QUniform (or X2)"), ("QMean + q1", 8, "QSelf (or X1)"), ("max(Q2, 1)", 4, "QMean (or X0)")]
        {
            let e = Formula::parse_infix(text).unwrap_err();
            let FormulaError::Infix { message, position: at } = &e else { panic!("{text}: {e:?}") };
            assert_eq!(*at, position, "{text}");
            assert!(message.contains("is ambiguous") && message.contains(spelling), "{text}: {message}");
            assert!(message.contains("paper_names=True"), "{message}");
            // Through parse_any too: RPN fails, and the infix reason is the ambiguity.
            assert!(Formula::parse_any(text).unwrap_err().to_string().contains("is ambiguous"), "{text}");
        }
    }

    #[test]
    fn parses_variants_and_names_errors() {
        assert_eq!(Formula::parse_infix("abs(X0)").unwrap(), rpn("X0 ABS"));
        assert_eq!(Formula::parse_infix("inv(qself)").unwrap(), rpn("X1 INV"));
        assert_eq!(Formula::parse_infix(" ( QMEAN )*-QSelf ").unwrap(), rpn("X0 X1 OPP MUL2"));
        assert_eq!(Formula::parse_infix("||X0||").unwrap(), rpn("X0 ABS ABS"));
        assert_eq!(Formula::parse_infix("QMean-3").unwrap(), rpn("X0 3 SUB"));
        assert_eq!(Formula::parse_infix("1e-3 * QMean").unwrap(), rpn("0.001 X0 MUL2"));
        let e = Formula::parse_infix("QMean +").unwrap_err();
        assert!(e.to_string().contains("expected an operand"), "{e}");
        let e = Formula::parse_infix("foo(QMean)").unwrap_err();
        assert!(e.to_string().contains("unknown name 'foo'"), "{e}");
        let e = Formula::parse_infix("Q3").unwrap_err();
        assert!(e.to_string().contains("'Q3'"), "{e}");
        let e = Formula::parse_infix_with("Q3", VariableNames::Paper).unwrap_err();
        assert!(e.to_string().contains("unknown name 'Q3'"), "{e}");
        let e = Formula::parse_infix("max(QMean)").unwrap_err();
        assert!(e.to_string().contains("expected ','"), "{e}");
        let e = Formula::parse_infix("(QMean").unwrap_err();
        assert!(e.to_string().contains("expected ')'"), "{e}");
        let e = Formula::parse_infix("QMean QSelf").unwrap_err();
        assert!(e.to_string().contains("unexpected 'Q'"), "{e}");
        let e = Formula::parse_infix("1e999").unwrap_err();
        assert!(e.to_string().contains("not finite"), "{e}");
    }

    fn leaf() -> impl Strategy<Value = Vec<Token>> {
        prop_oneof![
            (0u8..3).prop_map(|i| vec![Token::Var(i)]),
            prop_oneof![
                Just(0.0),
                Just(-0.0),
                Just(1.0),
                Just(-1.0),
                -1e6..1e6f64,
                proptest::num::f64::NORMAL | proptest::num::f64::SUBNORMAL,
            ]
            .prop_map(|v| vec![Token::Const(v)]),
        ]
    }

    fn formula_tokens() -> impl Strategy<Value = Vec<Token>> {
        leaf().prop_recursive(6, 40, 2, |inner| {
            prop_oneof![
                (inner.clone(), proptest::sample::select(Unary::ALL.to_vec())).prop_map(|(mut a, u)| {
                    a.push(Token::Unary(u));
                    a
                }),
                (inner.clone(), inner, proptest::sample::select(Binary::ALL.to_vec())).prop_map(|(mut a, b, op)| {
                    a.extend(b);
                    a.push(Token::Binary(op));
                    a
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn infix_and_rpn_round_trip(tokens in formula_tokens()) {
            let f = Formula::new(tokens).unwrap();
            let infix = f.to_infix();
            let back = Formula::parse_infix(&infix).unwrap();
            prop_assert_eq!(&back, &f, "infix {}", infix);
            // Bit-exact constants (PartialEq would equate 0.0 and -0.0).
            for (a, b) in back.tokens().iter().zip(f.tokens()) {
                if let (Token::Const(x), Token::Const(y)) = (a, b) {
                    prop_assert_eq!(x.to_bits(), y.to_bits());
                }
            }
            prop_assert_eq!(&Formula::parse_rpn(&f.to_rpn()).unwrap(), &f);
            prop_assert_eq!(&Formula::parse_any(&infix).unwrap(), &f);
            // The paper's names round-trip too, to the same tokens.
            let paper = f.to_infix_with(VariableNames::Paper);
            prop_assert_eq!(&Formula::parse_infix_with(&paper, VariableNames::Paper).unwrap(), &f, "paper infix {}", paper);
        }
    }
}
