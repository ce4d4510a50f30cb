//! Helpers of the criterion benches: the benchmark's problems, from the core's single source
//! (`bbrl_core::model::problems`, checked against the original data files by the Python test suite).

use bbrl_core::model::fdm::Fdm;

/// GC, the Generalised Chain (accurate prior).
pub fn gc() -> Fdm {
    bbrl_core::model::problems::generalized_chain()
}

/// GDL, the Generalised Double-Loop (accurate prior).
pub fn gdl() -> Fdm {
    bbrl_core::model::problems::generalized_double_loop()
}

/// Grid, the 5x5 grid (accurate prior).
pub fn grid() -> Fdm {
    bbrl_core::model::problems::grid()
}

/// The CPU model (`model name` of /proc/cpuinfo, "unknown" elsewhere).
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, name)| name.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Prints, once per bench binary, the CPU model, the vector paths it runs and the one the
/// solvers take (`BBRL_SIMD` forces it), so that every saved bench log names its machine.
pub fn print_machine() {
    static PRINTED: std::sync::Once = std::sync::Once::new();
    PRINTED.call_once(|| {
        use bbrl_core::solve::SimdPath;
        let runnable: Vec<&str> = SimdPath::ALL.iter().filter(|p| p.is_available()).map(|p| p.name()).collect();
        eprintln!(
            "machine: CPU {}, {} logical CPUs, runs {}; solvers take the {} path",
            cpu_model(),
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            runnable.join("/"),
            SimdPath::selected(),
        );
    });
}
