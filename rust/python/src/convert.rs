//! The one rule for every integer that crosses into the core: an argument typed [`Count`]
//! (`usize`) or [`Seed`] (`u64`) takes any Python int or integer-like object (NumPy's integers,
//! anything with `__index__`), and refuses a bool, a float, a negative or a too-large integer
//! with a `TypeError` that the binding prefixes with the argument's name:
//! `argument 'max_size': must be an integer from 0 to 18446744073709551615, got -1`
//! (instead of a bare `OverflowError: can't convert negative int to unsigned`).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyBool;

/// A non-negative integer argument that fits a `usize`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Count(pub usize);

/// A non-negative integer argument that fits a `u64` (seeds, stream indices).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seed(pub u64);

/// `ob` as an integer in `0..=max`; every other value is a `TypeError` saying what was given.
fn non_negative(ob: &Bound<'_, PyAny>, max: u64) -> PyResult<u64> {
    let wanted = || format!("must be an integer from 0 to {max}");
    if ob.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!("{}, got a bool ({ob})", wanted())));
    }
    // `__index__` is how Python says "an integer" (NumPy's integers have it, floats do not).
    let index = match ob.call_method0("__index__") {
        Ok(index) => index,
        Err(_) => {
            let kind = ob.get_type().name().map_or_else(|_| "?".to_string(), |n| n.to_string());
            return Err(PyTypeError::new_err(format!("{}, got {kind} {}", wanted(), short_repr(ob))));
        }
    };
    match index.extract::<i128>() {
        Ok(v) if (0..=i128::from(max)).contains(&v) => Ok(v as u64),
        _ => Err(PyTypeError::new_err(format!("{}, got {}", wanted(), short_repr(&index)))),
    }
}

/// A value's repr, cut to a readable length (a huge integer is thousands of digits).
fn short_repr(ob: &Bound<'_, PyAny>) -> String {
    let text = ob.repr().map_or_else(|_| "?".to_string(), |r| r.to_string());
    if text.chars().count() > 40 {
        let head: String = text.chars().take(37).collect();
        format!("{head}...")
    } else {
        text
    }
}

impl<'py> FromPyObject<'py> for Count {
    fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
        Ok(Count(non_negative(ob, usize::MAX as u64)? as usize))
    }
}

impl<'py> FromPyObject<'py> for Seed {
    fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
        Ok(Seed(non_negative(ob, u64::MAX)?))
    }
}
