//! The memory rule: what one agent, environment or run may allocate for the sizes its parameters
//! set, checked before anything is allocated, so that a parameter too large for the machine is an
//! error naming it instead of an aborted process.
//!
//! The limit is half of the machine's physical memory, or `BBRL_MEMORY_LIMIT` when set (bytes, or
//! a number with a unit: `512MiB`, `8GiB`, `2GB`, ...). It applies to one object: a run that holds
//! an agent per thread holds up to that many. Estimates count the tables a parameter sizes (a
//! tree's nodes, sampled models, staged value tables), from above.

use crate::error::Result;
use crate::invalid;

/// The environment variable that overrides the limit.
pub const LIMIT_VARIABLE: &str = "BBRL_MEMORY_LIMIT";

/// The limit in bytes: `BBRL_MEMORY_LIMIT` when set and valid, else half the physical memory
/// (16 GiB when it cannot be read). An invalid `BBRL_MEMORY_LIMIT` is an error naming it.
pub fn limit() -> Result<u64> {
    match std::env::var(LIMIT_VARIABLE) {
        Ok(text) => parse_size(&text).map_err(|e| invalid!("{LIMIT_VARIABLE}: {e}")),
        Err(_) => Ok(physical_memory().map_or(16 << 30, |bytes| bytes / 2)),
    }
}

/// Where the limit comes from, for messages.
pub fn limit_source() -> &'static str {
    if std::env::var_os(LIMIT_VARIABLE).is_some() {
        "set by BBRL_MEMORY_LIMIT"
    } else {
        "half of this machine's memory; BBRL_MEMORY_LIMIT changes it"
    }
}

/// Refuses `bytes` above the limit: the error names `what` (the object and the parameters that
/// size it), the size and the limit.
pub fn check(what: &str, bytes: u128) -> Result<()> {
    let limit = limit()?;
    if bytes > u128::from(limit) {
        return Err(invalid!(
            "{what} would need {} of memory, above the limit of {} ({})",
            human(bytes),
            human(u128::from(limit)),
            limit_source()
        ));
    }
    Ok(())
}

/// The physical memory of the machine in bytes, if the system says.
pub fn physical_memory() -> Option<u64> {
    #[cfg(unix)]
    {
        // SAFETY: sysconf reads system constants and has no preconditions.
        let (pages, page_size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
        if pages > 0 && page_size > 0 {
            return (pages as u64).checked_mul(page_size as u64);
        }
    }
    None
}

/// A size such as `1000`, `512MiB`, `8 GiB`, `2GB` or `1.5e9`, in bytes.
pub fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let text = text.trim();
    // The unit is the trailing letters ("1.5e9" has none: its `e` is the number's).
    let split = text.trim_end_matches(|c: char| c.is_ascii_alphabetic()).len();
    let (number, unit) = (text[..split].trim(), text[split..].trim());
    let scale: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024f64.powi(2),
        "gib" => 1024f64.powi(3),
        "tib" => 1024f64.powi(4),
        _ => return Err(format!("unknown unit {unit:?} in {text:?} (use B, kB, MB, GB, TB, KiB, MiB, GiB or TiB)")),
    };
    let value: f64 = number.parse().map_err(|_| format!("{text:?} is not a size (e.g. 8GiB or 2000000000)"))?;
    let bytes = value * scale;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < 2f64.powi(64)) {
        return Err(format!("{text:?} must be a size of at least 1 byte"));
    }
    Ok(bytes as u64)
}

/// `bytes` for people: `8.0 TB`-style with binary units (`12.0 GiB`).
pub fn human(bytes: u128) -> String {
    const UNITS: [&str; 7] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else if unit + 1 == UNITS.len() && value >= 1024.0 {
        format!("{value:.3e} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// Bytes of `n` values of type `T`, saturating (an estimate never wraps round to a small size).
pub fn bytes_of<T>(n: u128) -> u128 {
    n.saturating_mul(std::mem::size_of::<T>() as u128)
}

/// The product of sizes, saturating.
pub fn product(sizes: &[usize]) -> u128 {
    sizes.iter().fold(1u128, |acc, &n| acc.saturating_mul(n as u128))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes_with_units() {
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert_eq!(parse_size("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size(" 8 GiB ").unwrap(), 8 << 30);
        assert_eq!(parse_size("2GB").unwrap(), 2_000_000_000);
        assert_eq!(parse_size("1.5e9").unwrap(), 1_500_000_000);
        for bad in ["", "x", "-1", "0", "8 parsecs", "nan", "1e30"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names_sizes_for_people() {
        assert_eq!(human(17), "17 bytes");
        assert_eq!(human(8_000_000_000_008), "7.3 TiB");
        assert_eq!(human(12 << 30), "12.0 GiB");
        assert_eq!(human(u128::MAX), "2.951e20 EiB");
    }

    #[test]
    fn the_machine_memory_is_read() {
        assert!(physical_memory().unwrap() > 1 << 20);
    }

    #[test]
    fn refuses_above_the_limit_and_names_it() {
        // The default limit (no variable in the test environment is assumed): huge is refused.
        let e = check("agent 'X' (k = 10^12)", u128::MAX).unwrap_err().to_string();
        assert!(e.contains("agent 'X' (k = 10^12) would need") && e.contains("above the limit of"), "{e}");
        assert!(check("small", 1024).is_ok());
    }

    #[test]
    fn estimates_saturate() {
        assert_eq!(product(&[usize::MAX, usize::MAX, usize::MAX]), u128::MAX);
        assert_eq!(bytes_of::<f64>(u128::MAX), u128::MAX);
        assert_eq!(bytes_of::<f64>(3), 24);
    }
}
