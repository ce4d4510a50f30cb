//! The machine a result was measured on: CPU model, the vector extensions the solvers can use,
//! core count and load. Recorded beside every time so that a reader can tell two machines apart.

/// A description of the host, read once per result file.
#[derive(Clone, Debug, PartialEq)]
pub struct HostInfo {
    /// The CPU's model name (`/proc/cpuinfo` on Linux), or the architecture when unknown.
    pub cpu_model: String,
    /// Vector extensions detected at run time that bbrl's code paths care about (AVX-512 for the
    /// value-iteration sweeps), e.g. `["sse4.2", "avx2", "fma", "avx512f"]`.
    pub vector_extensions: Vec<&'static str>,
    /// Logical cores this process may use.
    pub logical_cores: usize,
    /// The 1-minute load average when the host was described (`/proc/loadavg`), NaN if unknown.
    pub load_average: f64,
}

/// Describes the host now.
pub fn host_info() -> HostInfo {
    HostInfo {
        cpu_model: cpu_model().unwrap_or_else(|| std::env::consts::ARCH.to_string()),
        vector_extensions: vector_extensions(),
        logical_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        load_average: load_average().unwrap_or(f64::NAN),
    }
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.split_whitespace().collect::<Vec<_>>().join(" "))
    })
}

fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg").ok()?.split_whitespace().next()?.parse().ok()
}

#[cfg(target_arch = "x86_64")]
fn vector_extensions() -> Vec<&'static str> {
    let mut found = Vec::new();
    if std::arch::is_x86_feature_detected!("sse4.2") {
        found.push("sse4.2");
    }
    if std::arch::is_x86_feature_detected!("avx") {
        found.push("avx");
    }
    if std::arch::is_x86_feature_detected!("avx2") {
        found.push("avx2");
    }
    if std::arch::is_x86_feature_detected!("fma") {
        found.push("fma");
    }
    if std::arch::is_x86_feature_detected!("avx512f") {
        found.push("avx512f");
    }
    found
}

#[cfg(target_arch = "aarch64")]
fn vector_extensions() -> Vec<&'static str> {
    if std::arch::is_aarch64_feature_detected!("neon") {
        vec!["neon"]
    } else {
        Vec::new()
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn vector_extensions() -> Vec<&'static str> {
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_described() {
        let host = host_info();
        assert!(!host.cpu_model.is_empty());
        assert!(host.logical_cores >= 1);
        assert!(host.load_average.is_nan() || host.load_average >= 0.0);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(host.vector_extensions.contains(&"avx512f"), std::arch::is_x86_feature_detected!("avx512f"));
    }
}
