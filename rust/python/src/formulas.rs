//! Converts OPPS-DS's formula language: parsing, evaluation, formula sets.

use crate::convert::{Count, Seed};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::to_py;

/// Parses a formula (RPN or infix; infix Q0/Q1/Q2 are the paper's only with `paper_names`):
/// (RPN, infix with bbrl's names, infix with the paper's names, number of tokens).
#[pyfunction]
#[pyo3(signature = (text, paper_names = false))]
fn formula_parse(text: &str, paper_names: bool) -> PyResult<(String, String, String, usize)> {
    use bbrl_core::formula::{Formula, VariableNames};
    let names = if paper_names { VariableNames::Paper } else { VariableNames::Bbrl };
    let f = Formula::parse_any_with(text, names).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((f.to_rpn(), f.to_infix(), f.to_infix_with(VariableNames::Paper), f.len()))
}

/// Evaluates a formula at (X0, X1, X2); evaluation errors (LN of a non-positive value, SQRT of a
/// negative one, INV or DIV by zero) raise ArithmeticError.
#[pyfunction]
fn formula_eval(text: &str, x0: f64, x1: f64, x2: f64) -> PyResult<f64> {
    let f = bbrl_core::formula::Formula::parse_any(text).map_err(|e| PyValueError::new_err(e.to_string()))?;
    f.eval([x0, x1, x2]).map_err(|e| pyo3::exceptions::PyArithmeticError::new_err(e.to_string()))
}

/// Generates F_n (RPN strings) with the random points of `seed`.
#[pyfunction]
fn formula_set(py: Python<'_>, n: Count, seed: Seed, n_points: Count) -> PyResult<Vec<String>> {
    let n = n.0;
    let seed = seed.0;
    let n_points = n_points.0;
    let set = py.detach(|| bbrl_core::formula::set::formula_set(n, seed, n_points)).map_err(to_py)?;
    Ok(set.iter().map(|f| f.to_rpn()).collect())
}

/// The shipped formula set `F2`..`F6` (RPN strings).
#[pyfunction]
fn shipped_formula_set(name: &str) -> PyResult<Vec<String>> {
    let set = bbrl_core::formula::set::shipped_set(name).map_err(to_py)?;
    Ok(set.iter().map(|f| f.to_rpn()).collect())
}

/// Adds this file's classes and functions to the module.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(formula_parse, m)?)?;
    m.add_function(wrap_pyfunction!(formula_eval, m)?)?;
    m.add_function(wrap_pyfunction!(formula_set, m)?)?;
    m.add_function(wrap_pyfunction!(shipped_formula_set, m)?)?;
    Ok(())
}
