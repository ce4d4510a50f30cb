//! The sample counts at which a confidence sequence is read (a race's batch ends), checked once
//! for every sequence.

use crate::error::Result;
use crate::invalid;

/// `checkpoints` are strictly increasing sample counts between 1 and `n`, or an error naming them.
pub(super) fn check_checkpoints(checkpoints: &[usize], n: usize) -> Result<()> {
    if checkpoints.is_empty() {
        return Err(invalid!("checkpoints must name at least one sample count"));
    }
    let increasing = checkpoints.windows(2).all(|w| w[0] < w[1]);
    if !increasing || checkpoints[0] < 1 || checkpoints[checkpoints.len() - 1] > n {
        return Err(invalid!(
            "checkpoints must be strictly increasing sample counts between 1 and {n}, got {checkpoints:?}"
        ));
    }
    Ok(())
}
