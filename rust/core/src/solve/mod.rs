//! The two dynamic-programming routines of the original (SPEC 2.1 and 2.2), writing into
//! caller-owned buffers so that agents re-solve their model at every step without allocating.

use std::sync::OnceLock;

mod lanes512;
mod pairs;
mod ragged;
#[cfg(test)]
mod scalar;
pub mod uniform;

use crate::invalid;
use crate::model::tables::TabularView;
use crate::work::{self, Unit};
#[cfg(target_arch = "x86_64")]
use lanes512::Lanes512;
use pairs::LanePairs;
use ragged::RaggedRows;

/// BBRL's per-entry convergence threshold of Q-iteration (`ACCURACY` in `dds.h`).
pub const BBRL_Q_ACCURACY: f64 = 1e-2;
/// The Guez value-iteration threshold (`eps` of BEB and SBOSS).
pub const GUEZ_VI_EPSILON: f64 = 1e-4;
/// A safety cap on Guez value iteration, which has none in the original: with gamma < 1 and
/// finite rewards it converges in far fewer sweeps (about 400 at gamma = 0.95), but a cap
/// guarantees that a floating-point cycle can never hang a run.
pub const GUEZ_VI_MAX_SWEEPS: usize = 1_000_000;

/// BBRL Q-iteration (`MDP::qIteration`, SPEC 2.1): Jacobi sweeps from `Q = 0`,
/// `Q(s, a) = sum_y P(s, a, y) (R(s, a, y) + gamma max_b Q_prev(y, b))`, stopped when no entry
/// moved by more than `accuracy`, or after `max_sweeps + 1` sweeps (the original passes the
/// horizon `T` as `max_sweeps`). Always a cold start, as in the original (SPEC 7.6).
///
/// Convenience form that allocates its workspace; agents keep a [`QIterationWorkspace`].
/// `q` has `S * A` entries. Returns the number of sweeps.
pub fn q_iteration(model: TabularView<'_>, gamma: f64, max_sweeps: usize, accuracy: f64, q: &mut [f64]) -> usize {
    QIterationWorkspace::new(model.n_states, model.n_actions).solve(model, gamma, max_sweeps, accuracy, q)
}

/// The sweeps of BBRL Q-iteration's stopping rule (see [`q_iteration`]): runs `sweep` (one Jacobi
/// sweep, saying whether an entry moved by more than the accuracy) until one moves nothing or
/// `max_sweeps + 1` have run; returns how many ran. The row-at-a-time solvers share it; the
/// vector kernels keep the rule in their own loops, around their lane pointers.
#[inline(always)]
pub(crate) fn q_iteration_sweeps(max_sweeps: usize, mut sweep: impl FnMut() -> bool) -> usize {
    let mut sweeps = 0;
    loop {
        let moved = sweep();
        let go_on = sweeps < max_sweeps && moved;
        sweeps += 1;
        if !go_on {
            return sweeps;
        }
    }
}

/// A discount in [0, 1) (the solvers' contract), or an error naming it.
fn check_gamma(gamma: f64) -> crate::Result<()> {
    if !(0.0..1.0).contains(&gamma) {
        return Err(invalid!("gamma must be in [0, 1), got {gamma}"));
    }
    Ok(())
}

/// [`q_iteration`] for a front end: checks `gamma` (in [0, 1)) and `accuracy` (finite, >= 0)
/// and returns Q (`S * A` entries).
pub fn q_values(model: TabularView<'_>, gamma: f64, max_sweeps: usize, accuracy: f64) -> crate::Result<Vec<f64>> {
    check_gamma(gamma)?;
    if !(accuracy.is_finite() && accuracy >= 0.0) {
        return Err(invalid!("accuracy must be finite and >= 0, got {accuracy}"));
    }
    let mut q = vec![0.0; model.n_states * model.n_actions];
    q_iteration(model, gamma, max_sweeps, accuracy, &mut q);
    Ok(q)
}

/// Buffers of BBRL Q-iteration, sized once per model shape so that re-solving after every
/// transition never allocates. The two Q buffers swap roles each sweep instead of being copied.
#[derive(Clone, Debug)]
pub struct QIterationWorkspace {
    n_states: usize,
    n_actions: usize,
    baseline: LanePairs,
    vectorised: Vectorised,
    /// The ragged rows of `ragged.rs`, for models of more than `ragged::MIN_STATES` states, taken
    /// instead of `vectorised` when a model's rows are of very unequal widths.
    ragged: Option<Box<RaggedRows>>,
}

impl QIterationWorkspace {
    /// A workspace on the process's vector path ([`SimdPath::selected`]).
    pub fn new(n_states: usize, n_actions: usize) -> Self {
        Self::with_path(n_states, n_actions, SimdPath::selected())
    }

    /// A workspace on `path`, or on the scalar sweeps if this CPU cannot run `path` or `path`
    /// does not serve models of this size ([`Self::path`] says which was taken). For tests and
    /// benches: every path gives bit-identical results.
    pub fn with_path(n_states: usize, n_actions: usize, path: SimdPath) -> Self {
        Self {
            n_states,
            n_actions,
            baseline: LanePairs::new(n_states, n_actions),
            vectorised: Vectorised::new(n_states, n_actions, path),
            ragged: ragged_rows(n_states, n_actions),
        }
    }

    /// The vector path this workspace's sweeps take (except where a model of more than 32 states
    /// has rows of very unequal widths: those take the ragged rows of `ragged.rs`, as bit-identical).
    pub fn path(&self) -> SimdPath {
        self.vectorised.path()
    }

    /// The (S, A) shape the workspace was sized for.
    pub fn shape(&self) -> (usize, usize) {
        (self.n_states, self.n_actions)
    }

    /// Solves `model` (whose shape must be the workspace's) into `q` (`S * A` entries).
    /// Returns the number of sweeps (counted as [`Unit::QRowSweeps`] and [`Unit::QEntrySweeps`]).
    pub fn solve(
        &mut self,
        model: TabularView<'_>,
        gamma: f64,
        max_sweeps: usize,
        accuracy: f64,
        q: &mut [f64],
    ) -> usize {
        let sweeps = self.solve_uncounted(model, gamma, max_sweeps, accuracy, q);
        count_sweeps(model, sweeps, Unit::QRowSweeps, Unit::QEntrySweeps);
        sweeps
    }

    fn solve_uncounted(
        &mut self,
        model: TabularView<'_>,
        gamma: f64,
        max_sweeps: usize,
        accuracy: f64,
        q: &mut [f64],
    ) -> usize {
        assert_eq!((model.n_states, model.n_actions), (self.n_states, self.n_actions));
        if let Some(rows) = self.ragged.as_mut().filter(|_| ragged::suits(model)) {
            rows.pack(model, None);
            return rows.q_iteration(gamma, max_sweeps, accuracy, q);
        }
        match &mut self.vectorised {
            Vectorised::Scalar => {}
            #[cfg(target_arch = "aarch64")]
            Vectorised::Neon => {}
            #[cfg(target_arch = "x86_64")]
            Vectorised::Avx2 => {}
            #[cfg(target_arch = "x86_64")]
            Vectorised::Avx512(lanes) => {
                lanes.pack(model, None);
                return lanes.q_iteration(gamma, max_sweeps, accuracy, q);
            }
        }
        self.baseline.pack(model, None);
        self.baseline.q_iteration(gamma, max_sweeps, accuracy, q)
    }
}

/// The sweeps a solver workspace runs: the two-lane baseline kernel of `pairs.rs` (SSE2 on
/// x86-64, NEON on aarch64, plain arrays elsewhere), or one of the wider x86-64 paths, all
/// bit-identical (same IEEE operations in the same order) to the row-at-a-time reference loops of
/// `scalar.rs`, which the tests keep.
///
/// The process-wide choice ([`SimdPath::selected`]) is the fastest path the CPU runs, unless the
/// environment variable `BBRL_SIMD` (`scalar`, `neon`, `avx2`, `avx512` or `auto`) asks for
/// another, for tests and benches. A workspace falls back to slower paths for models a vector path
/// does not serve (AVX-512: more than 32 states; AVX2, NEON and the scalar path serve every
/// size). AVX2 and NEON run the baseline kernel: AVX2 sweeps of their own were slower than it on
/// the machine measured (benches/README.md, "Vector paths and machines").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdPath {
    /// The baseline: two states per 128-bit register (`pairs.rs`), every CPU, every model size.
    /// Its registers are SSE2's on x86-64 and NEON's on aarch64 (both part of the architecture),
    /// plain arrays elsewhere.
    Scalar,
    /// NEON on aarch64: the same kernel as the scalar path there (`pairs.rs`), every size; named
    /// so that a run says it took NEON and the aarch64 check can insist on it.
    Neon,
    /// x86-64 CPUs with AVX2 (since 2013): the baseline kernel (`pairs.rs`), every size. The
    /// AVX2 sweeps it had (four states per register) were 30 to 75% slower than that kernel in
    /// whole runs of GC, GDL and Grid on the machine measured, so they were removed; named so
    /// that a run says which CPU class it was on.
    Avx2,
    /// AVX-512F sweeps (`lanes512.rs`): models of up to 32 states.
    Avx512,
}

/// The environment variable that forces a vector path.
pub const SIMD_ENV_VAR: &str = "BBRL_SIMD";

impl SimdPath {
    /// Every path, in the order of fallbacks: a path this CPU cannot run falls back to the
    /// nearest one before it that it runs (a CPU runs NEON or the x86-64 paths, never both).
    pub const ALL: [SimdPath; 4] = [SimdPath::Scalar, SimdPath::Neon, SimdPath::Avx2, SimdPath::Avx512];

    /// The name `BBRL_SIMD` takes: `scalar`, `neon`, `avx2` or `avx512`.
    pub fn name(self) -> &'static str {
        match self {
            SimdPath::Scalar => "scalar",
            SimdPath::Neon => "neon",
            SimdPath::Avx2 => "avx2",
            SimdPath::Avx512 => "avx512",
        }
    }

    /// The path of a name (`scalar`, `neon`, `avx2`, `avx512`, any case).
    pub fn from_name(name: &str) -> Option<SimdPath> {
        Self::ALL.into_iter().find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }

    /// Whether this CPU runs the path.
    pub fn is_available(self) -> bool {
        match self {
            SimdPath::Scalar => true,
            #[cfg(target_arch = "aarch64")]
            SimdPath::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx512 => lanes512::available(),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// Whether the path serves models of this shape (AVX-512: 1 to 32 states; the others: every
    /// size).
    pub fn serves(self, n_states: usize, n_actions: usize) -> bool {
        let max_states = match self {
            SimdPath::Scalar => return true,
            #[cfg(target_arch = "aarch64")]
            SimdPath::Neon => return n_states > 0 && n_actions > 0,
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx2 => return n_states > 0 && n_actions > 0,
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx512 => lanes512::MAX_STATES,
            #[allow(unreachable_patterns)]
            _ => 0,
        };
        (1..=max_states).contains(&n_states) && n_actions > 0
    }

    /// The fastest path at most `self` that this CPU runs and that serves the shape.
    pub fn best_at_most(self, n_states: usize, n_actions: usize) -> SimdPath {
        Self::ALL
            .into_iter()
            .rev()
            .find(|&p| p <= self && p.is_available() && p.serves(n_states, n_actions))
            .unwrap_or(SimdPath::Scalar)
    }

    /// The fastest path this CPU runs.
    pub fn fastest_available() -> SimdPath {
        Self::ALL.into_iter().rev().find(|p| p.is_available()).unwrap_or(SimdPath::Scalar)
    }

    /// The process's path: `BBRL_SIMD` if set to a path this CPU runs, else the fastest
    /// available. A value that is not a path name, or names a path this CPU cannot run, is
    /// reported once on stderr and replaced by `auto` (respectively the fastest path below the
    /// one asked for). Read once per process.
    pub fn selected() -> SimdPath {
        static SELECTED: OnceLock<SimdPath> = OnceLock::new();
        *SELECTED.get_or_init(|| {
            let (path, warning) = Self::resolve(std::env::var(SIMD_ENV_VAR).ok().as_deref());
            if let Some(warning) = warning {
                eprintln!("bbrl: {warning}");
            }
            path
        })
    }

    /// The path a value of `BBRL_SIMD` selects (`None`: unset), and a warning when the value
    /// cannot be honoured as written.
    fn resolve(value: Option<&str>) -> (SimdPath, Option<String>) {
        let fastest = Self::fastest_available();
        let Some(value) = value.map(str::trim).filter(|v| !v.is_empty() && !v.eq_ignore_ascii_case("auto")) else {
            return (fastest, None);
        };
        match Self::from_name(value) {
            Some(path) if path.is_available() => (path, None),
            Some(path) => {
                let fallback = Self::ALL.into_iter().rev().find(|p| *p < path && p.is_available());
                let fallback = fallback.unwrap_or(SimdPath::Scalar);
                let warning = format!(
                    "{SIMD_ENV_VAR}={value}: this CPU cannot run the {} path; using {}",
                    path.name(),
                    fallback.name()
                );
                (fallback, Some(warning))
            }
            None => (
                fastest,
                Some(format!(
                    "{SIMD_ENV_VAR}={value} is not a vector path (scalar, neon, avx2, avx512 or auto); using {}",
                    fastest.name()
                )),
            ),
        }
    }
}

impl std::fmt::Display for SimdPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A workspace's wider vector sweeps (`lanes512.rs`), or none: the baseline kernel of `pairs.rs`
/// (the scalar path, NEON on aarch64 and AVX2 on x86-64). Boxed, so that a workspace on the
/// baseline carries no other buffers.
#[derive(Clone, Debug)]
enum Vectorised {
    Scalar,
    #[cfg(target_arch = "aarch64")]
    Neon,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512(Box<Lanes512>),
}

impl Vectorised {
    /// The sweeps of the fastest path at most `path` that this CPU runs and that serves the shape.
    fn new(n_states: usize, n_actions: usize, path: SimdPath) -> Self {
        match path.best_at_most(n_states, n_actions) {
            SimdPath::Scalar => Vectorised::Scalar,
            #[cfg(target_arch = "aarch64")]
            SimdPath::Neon => Vectorised::Neon,
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx2 => Vectorised::Avx2,
            #[cfg(target_arch = "x86_64")]
            SimdPath::Avx512 => Vectorised::Avx512(Box::new(Lanes512::new(n_states, n_actions))),
            #[allow(unreachable_patterns)]
            _ => Vectorised::Scalar,
        }
    }

    fn path(&self) -> SimdPath {
        match self {
            Vectorised::Scalar => SimdPath::Scalar,
            #[cfg(target_arch = "aarch64")]
            Vectorised::Neon => SimdPath::Neon,
            #[cfg(target_arch = "x86_64")]
            Vectorised::Avx2 => SimdPath::Avx2,
            #[cfg(target_arch = "x86_64")]
            Vectorised::Avx512(_) => SimdPath::Avx512,
        }
    }
}

/// The ragged-row sweeps of a workspace for models of this shape, or none: models of at most
/// `ragged::MIN_STATES` states always take the padded paths. Every layout gives the same bits, so
/// which one a solve takes (it depends on the model's row widths) never changes a result.
fn ragged_rows(n_states: usize, n_actions: usize) -> Option<Box<RaggedRows>> {
    (n_states > ragged::MIN_STATES).then(|| Box::new(RaggedRows::new(n_states, n_actions)))
}

/// Counts `sweeps` sweeps over `model`: its rows and its support entries, each times `sweeps`
/// (the same on every vector path: padding and lanes are not counted), and one solve of a model
/// of that many entries.
fn count_sweeps(model: TabularView<'_>, sweeps: usize, rows: Unit, entries: Unit) {
    let n_rows = model.n_states * model.n_actions;
    let n_entries: usize = (0..n_rows).map(|row| model.support.row(row).len()).sum();
    work::add(rows, (n_rows * sweeps) as u64);
    work::add(entries, (n_entries * sweeps) as u64);
    work::add_solve(n_entries as u64, model.n_states);
}

/// Guez value iteration (`MDPutils.cpp::valueIteration`, SPEC 2.2): Jacobi sweeps from `V = 0`
/// until `||V_new - V_old||_2^2 <= epsilon^2`; the greedy policy of the last sweep, ties to the
/// lowest action (strict `>`). `row_bonus`, when given, adds `bonus[s * A + a]` to every reward
/// of the row (BEB's exploration bonus).
///
/// Convenience form that allocates its workspace; agents keep a [`ValueIterationWorkspace`].
/// `values` and `policy` have `S` entries. Returns the number of sweeps.
pub fn guez_value_iteration(
    model: TabularView<'_>,
    row_bonus: Option<&[f64]>,
    gamma: f64,
    epsilon: f64,
    values: &mut [f64],
    policy: &mut [usize],
) -> usize {
    ValueIterationWorkspace::new(model.n_states, model.n_actions)
        .solve(model, row_bonus, gamma, epsilon, values, policy)
}

/// [`guez_value_iteration`] for a front end: checks `gamma` (in [0, 1)) and `epsilon` (finite,
/// > 0) and returns (V, greedy policy), one entry per state.
pub fn optimal_values(model: TabularView<'_>, gamma: f64, epsilon: f64) -> crate::Result<(Vec<f64>, Vec<usize>)> {
    check_gamma(gamma)?;
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(invalid!("epsilon must be finite and > 0, got {epsilon}"));
    }
    let s = model.n_states;
    let (mut v, mut pi) = (vec![0.0; s], vec![0usize; s]);
    guez_value_iteration(model, None, gamma, epsilon, &mut v, &mut pi);
    Ok((v, pi))
}

/// [`evaluate_policy_finite`] for a front end: checks that `policy`, a row-major table of shape
/// `shape`, is (S, A).
pub fn policy_values(
    model: TabularView<'_>,
    policy: &[f64],
    shape: [usize; 2],
    gamma: f64,
    horizon: usize,
) -> crate::Result<Vec<f64>> {
    let (s, a) = (model.n_states, model.n_actions);
    if shape != [s, a] || policy.len() != s * a {
        return Err(invalid!("policy must have shape (S, A) = ({s}, {a}), got {shape:?}"));
    }
    Ok(evaluate_policy_finite(model, policy, gamma, horizon))
}

/// Buffers of Guez value iteration, sized once per model shape.
#[derive(Clone, Debug)]
pub struct ValueIterationWorkspace {
    n_states: usize,
    n_actions: usize,
    baseline: LanePairs,
    vectorised: Vectorised,
    /// The ragged rows of `ragged.rs`, for models of more than `ragged::MIN_STATES` states, taken
    /// instead of `vectorised` when a model's rows are of very unequal widths.
    ragged: Option<Box<RaggedRows>>,
}

impl ValueIterationWorkspace {
    /// A workspace on the process's vector path ([`SimdPath::selected`]).
    pub fn new(n_states: usize, n_actions: usize) -> Self {
        Self::with_path(n_states, n_actions, SimdPath::selected())
    }

    /// A workspace on `path`, or on the scalar sweeps if this CPU cannot run `path` or `path`
    /// does not serve models of this size ([`Self::path`] says which was taken). For tests and
    /// benches: every path gives bit-identical results.
    pub fn with_path(n_states: usize, n_actions: usize, path: SimdPath) -> Self {
        Self {
            n_states,
            n_actions,
            baseline: LanePairs::new(n_states, n_actions),
            vectorised: Vectorised::new(n_states, n_actions, path),
            ragged: ragged_rows(n_states, n_actions),
        }
    }

    /// The vector path this workspace's sweeps take (except where a model of more than 32 states
    /// has rows of very unequal widths: those take the ragged rows of `ragged.rs`, as bit-identical).
    pub fn path(&self) -> SimdPath {
        self.vectorised.path()
    }

    /// Solves `model` into `values` and `policy` (`S` entries each). Returns the number of sweeps
    /// (counted as [`Unit::ViRowSweeps`] and [`Unit::ViEntrySweeps`]).
    pub fn solve(
        &mut self,
        model: TabularView<'_>,
        row_bonus: Option<&[f64]>,
        gamma: f64,
        epsilon: f64,
        values: &mut [f64],
        policy: &mut [usize],
    ) -> usize {
        let sweeps = self.solve_uncounted(model, row_bonus, gamma, epsilon, values, policy);
        count_sweeps(model, sweeps, Unit::ViRowSweeps, Unit::ViEntrySweeps);
        sweeps
    }

    fn solve_uncounted(
        &mut self,
        model: TabularView<'_>,
        row_bonus: Option<&[f64]>,
        gamma: f64,
        epsilon: f64,
        values: &mut [f64],
        policy: &mut [usize],
    ) -> usize {
        assert_eq!((model.n_states, model.n_actions), (self.n_states, self.n_actions));
        if let Some(rows) = self.ragged.as_mut().filter(|_| ragged::suits(model)) {
            rows.pack(model, row_bonus);
            return rows.value_iteration(gamma, epsilon, GUEZ_VI_MAX_SWEEPS, values, policy);
        }
        match &mut self.vectorised {
            Vectorised::Scalar => {}
            #[cfg(target_arch = "aarch64")]
            Vectorised::Neon => {}
            #[cfg(target_arch = "x86_64")]
            Vectorised::Avx2 => {}
            #[cfg(target_arch = "x86_64")]
            Vectorised::Avx512(lanes) => {
                lanes.pack(model, row_bonus);
                return lanes.value_iteration(gamma, epsilon, GUEZ_VI_MAX_SWEEPS, values, policy);
            }
        }
        self.baseline.pack(model, row_bonus);
        self.baseline.value_iteration(gamma, epsilon, GUEZ_VI_MAX_SWEEPS, values, policy)
    }
}

/// The finite-horizon expected discounted return of a stationary stochastic policy
/// `policy[s * A + a]` over `horizon` steps, from every state: `v_T` of
/// `v_0 = 0, v_{k+1} = r_pi + gamma P_pi v_k`. The exact expectation that a Monte-Carlo
/// benchmark of that policy estimates.
pub fn evaluate_policy_finite(model: TabularView<'_>, policy: &[f64], gamma: f64, horizon: usize) -> Vec<f64> {
    let (ns, na) = (model.n_states, model.n_actions);
    let mut v = vec![0.0; ns];
    let mut next = vec![0.0; ns];
    for _ in 0..horizon {
        for (s, slot) in next.iter_mut().enumerate() {
            let mut total = 0.0;
            for a in 0..na {
                let row = s * na + a;
                let pa = policy[row];
                if pa == 0.0 {
                    continue;
                }
                let base = row * ns;
                let mut q = 0.0;
                for &y in model.support.row(row) {
                    let i = base + y as usize;
                    q += model.transitions[i] * (model.rewards[i] + gamma * v[y as usize]);
                }
                total += pa * q;
            }
            *slot = total;
        }
        std::mem::swap(&mut v, &mut next);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::mdp::Mdp;
    use proptest::prelude::{prop_assert, prop_assert_eq, TestCaseError};

    /// A 3-state, 2-action MDP whose optimal values we know by solving the linear system of the
    /// optimal policy exactly.
    fn small_mdp() -> Mdp {
        let p = vec![
            0.5, 0.5, 0.0, /* s0 a0 */ 0.0, 0.2, 0.8, /* s0 a1 */
            1.0, 0.0, 0.0, /* s1 a0 */ 0.0, 0.0, 1.0, /* s1 a1 */
            0.3, 0.0, 0.7, /* s2 a0 */ 0.0, 1.0, 0.0, /* s2 a1 */
        ];
        let mut r = vec![0.0; 18];
        r[2 * 6 + 2] = 1.0; // s2 a0 -> s2: 1
        r[5] = 0.5; // s0 a1 -> s2: 0.5
        Mdp::new(3, 2, p, r, Some(0)).unwrap()
    }

    #[test]
    fn front_end_solvers_check_their_arguments_and_match_the_kernels() {
        let mdp = small_mdp();
        let mut q = vec![0.0; 6];
        q_iteration(mdp.view(), 0.9, 50, 1e-3, &mut q);
        assert_eq!(q_values(mdp.view(), 0.9, 50, 1e-3).unwrap(), q);
        let (mut v, mut pi) = (vec![0.0; 3], vec![0; 3]);
        guez_value_iteration(mdp.view(), None, 0.9, 1e-6, &mut v, &mut pi);
        assert_eq!(optimal_values(mdp.view(), 0.9, 1e-6).unwrap(), (v, pi));
        for gamma in [1.0, -0.1, f64::NAN] {
            let e = q_values(mdp.view(), gamma, 5, 1e-3).unwrap_err().to_string();
            assert!(e.contains("gamma must be in [0, 1)"), "{e}");
            assert!(optimal_values(mdp.view(), gamma, 1e-6).is_err());
        }
        assert!(q_values(mdp.view(), 0.9, 5, -1.0).unwrap_err().to_string().contains("accuracy"));
        assert!(optimal_values(mdp.view(), 0.9, 0.0).unwrap_err().to_string().contains("epsilon"));
        let uniform = vec![0.5; 6];
        assert_eq!(
            policy_values(mdp.view(), &uniform, [3, 2], 0.9, 10).unwrap(),
            evaluate_policy_finite(mdp.view(), &uniform, 0.9, 10)
        );
        let e = policy_values(mdp.view(), &uniform, [2, 3], 0.9, 10).unwrap_err().to_string();
        assert!(e.contains("policy must have shape (S, A) = (3, 2)"), "{e}");
    }

    /// Solves (I - gamma P_pi) v = r_pi by Gaussian elimination: the independent oracle.
    fn solve_policy(mdp: &Mdp, pi: &[usize], gamma: f64) -> Vec<f64> {
        let n = mdp.n_states();
        let na = mdp.n_actions();
        let mut m = vec![vec![0.0; n + 1]; n];
        for s in 0..n {
            let row = s * na + pi[s];
            m[s][s] += 1.0;
            for y in 0..n {
                let i = row * n + y;
                m[s][y] -= gamma * mdp.transitions()[i];
                m[s][n] += mdp.transitions()[i] * mdp.rewards()[i];
            }
        }
        for c in 0..n {
            let piv = (c..n).max_by(|&a, &b| m[a][c].abs().total_cmp(&m[b][c].abs())).unwrap();
            m.swap(c, piv);
            for r in 0..n {
                if r != c {
                    let f = m[r][c] / m[c][c];
                    for k in c..=n {
                        m[r][k] -= f * m[c][k];
                    }
                }
            }
        }
        (0..n).map(|s| m[s][n] / m[s][s]).collect()
    }

    fn optimal_by_enumeration(mdp: &Mdp, gamma: f64) -> Vec<f64> {
        let mut best = vec![f64::NEG_INFINITY; 3];
        for code in 0..8usize {
            let pi = [code & 1, (code >> 1) & 1, (code >> 2) & 1];
            let v = solve_policy(mdp, &pi, gamma);
            for s in 0..3 {
                best[s] = best[s].max(v[s]);
            }
        }
        best
    }

    #[test]
    fn guez_value_iteration_matches_the_linear_solve() {
        let mdp = small_mdp();
        let exact = optimal_by_enumeration(&mdp, 0.95);
        let (mut v, mut pi) = (vec![0.0; 3], vec![0; 3]);
        guez_value_iteration(mdp.view(), None, 0.95, 1e-10, &mut v, &mut pi);
        for s in 0..3 {
            assert!((v[s] - exact[s]).abs() < 1e-7, "state {s}: {} vs {}", v[s], exact[s]);
        }
        let v_pi = solve_policy(&mdp, &pi, 0.95);
        for s in 0..3 {
            assert!((v_pi[s] - exact[s]).abs() < 1e-7);
        }
    }

    #[test]
    fn q_iteration_matches_the_linear_solve_within_its_tolerance() {
        let mdp = small_mdp();
        let gamma = 0.95;
        let exact = optimal_by_enumeration(&mdp, gamma);
        let mut q = vec![0.0; 6];
        let sweeps = q_iteration(mdp.view(), gamma, 10_000, 1e-9, &mut q);
        assert!(sweeps > 1);
        for s in 0..3 {
            let v = q[2 * s].max(q[2 * s + 1]);
            // Stopping at per-entry change delta bounds the error by delta * gamma / (1 - gamma).
            assert!((v - exact[s]).abs() < 1e-9 * gamma / (1.0 - gamma) + 1e-12);
        }
    }

    #[test]
    fn q_iteration_is_capped_at_max_sweeps_plus_one() {
        let mdp = small_mdp();
        let mut q = vec![0.0; 6];
        assert_eq!(q_iteration(mdp.view(), 0.99, 5, 1e-12, &mut q), 6);
        assert_eq!(q_iteration(mdp.view(), 0.99, 0, 1e-12, &mut q), 1);
    }

    #[test]
    fn bellman_operator_is_a_gamma_contraction() {
        // Two sweeps from different starts shrink their sup distance by at least gamma.
        let mdp = small_mdp();
        let gamma = 0.9;
        let mut q1 = vec![0.0; 6];
        let mut prev_gap = f64::INFINITY;
        let mut prev_q = vec![0.0; 6];
        for k in 1..30 {
            q_iteration(mdp.view(), gamma, k, 0.0, &mut q1);
            let gap = q1.iter().zip(&prev_q).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            if k > 1 {
                assert!(gap <= gamma * prev_gap + 1e-12, "sweep {k}: {gap} > {gamma} * {prev_gap}");
            }
            prev_gap = gap;
            prev_q.copy_from_slice(&q1);
        }
    }

    /// A random model: every row has a random support (at least one state) with random
    /// probabilities summing to 1, and rewards of either sign.
    fn random_model(n_states: usize, n_actions: usize, seed: u64) -> Mdp {
        use rand::{Rng as _, SeedableRng as _};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let mut p = vec![0.0; n_states * n_actions * n_states];
        let mut r = vec![0.0; p.len()];
        for row in p.chunks_exact_mut(n_states) {
            let keep = rng.random_range(0.05..1.0);
            for x in row.iter_mut() {
                *x = if rng.random::<f64>() < keep { rng.random::<f64>() } else { 0.0 };
            }
            if row.iter().all(|&x| x == 0.0) {
                row[rng.random_range(0..n_states)] = 1.0;
            }
            let total: f64 = row.iter().sum();
            row.iter_mut().for_each(|x| *x /= total);
        }
        for x in r.iter_mut() {
            *x = rng.random_range(-2.0..10.0);
        }
        Mdp::from_parts(n_states, n_actions, p, r.into(), Some(0))
    }

    /// A random model whose supports depend on the state only, as GC's and GDL's: every action
    /// of a state reaches the same next states (one to `n_states` of them), with its own random
    /// probabilities and rewards of either sign; the two-lane kernel then fetches each chunk's
    /// `gamma V(y)` once for all actions.
    fn state_support_model(n_states: usize, n_actions: usize, seed: u64) -> Mdp {
        use rand::{Rng as _, SeedableRng as _};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let (ns, na) = (n_states, n_actions);
        let mut p = vec![0.0; ns * na * ns];
        let mut r = vec![0.0; p.len()];
        for s in 0..ns {
            let keep = rng.random_range(0.0..1.0);
            let mut support: Vec<usize> = (0..ns).filter(|_| rng.random::<f64>() < keep).collect();
            if support.is_empty() {
                support.push(rng.random_range(0..ns));
            }
            for a in 0..na {
                let base = (s * na + a) * ns;
                for &y in &support {
                    p[base + y] = rng.random_range(0.1..1.0);
                }
                let total: f64 = p[base..base + ns].iter().sum();
                for y in 0..ns {
                    p[base + y] /= total;
                    r[base + y] = rng.random_range(-2.0..10.0);
                }
            }
        }
        Mdp::from_parts(ns, na, p, r.into(), Some(0))
    }

    /// The vector paths this machine runs (the property test checks each against the scalar
    /// loops); the others are named on stderr, so that a run on a smaller CPU says what it could
    /// not check.
    fn runnable_vector_paths() -> Vec<SimdPath> {
        let (runnable, missing): (Vec<_>, Vec<_>) =
            SimdPath::ALL.into_iter().filter(|&p| p != SimdPath::Scalar).partition(|p| p.is_available());
        for path in missing {
            eprintln!("this CPU cannot run the {path} path: its bit-identity is not checked here");
        }
        runnable
    }

    /// A random model with the structure of Grid on a `rows x cols` board: from each cell, each
    /// of four moves reaches the neighbour (if any) or stays, with random probabilities, and with
    /// probability 1/8 a row also reaches state 0 (Grid's goal teleport): rows of one to three
    /// next states, so padded slots in most terms.
    fn grid_like_model(rows: usize, cols: usize, seed: u64) -> Mdp {
        use rand::{Rng as _, SeedableRng as _};
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
        let (ns, na) = (rows * cols, 4);
        let mut p = vec![0.0; ns * na * ns];
        let mut r = vec![0.0; p.len()];
        for s in 0..ns {
            let (row, col) = (s / cols, s % cols);
            let neighbours = [
                (col > 0).then(|| s - 1),
                (col + 1 < cols).then(|| s + 1),
                (row > 0).then(|| s - cols),
                (row + 1 < rows).then(|| s + cols),
            ];
            for (a, neighbour) in neighbours.into_iter().enumerate() {
                let base = (s * na + a) * ns;
                p[base + s] += rng.random_range(0.1..1.0);
                if let Some(y) = neighbour {
                    p[base + y] += rng.random_range(0.1..1.0);
                }
                if rng.random_range(0..8) == 0 {
                    p[base] += rng.random_range(0.1..1.0);
                }
                let total: f64 = p[base..base + ns].iter().sum();
                for y in 0..ns {
                    p[base + y] /= total;
                    r[base + y] = rng.random_range(-2.0..10.0);
                }
            }
        }
        Mdp::from_parts(ns, na, p, r.into(), Some(0))
    }

    /// Checks the scalar path and every vector path this CPU runs against the row-at-a-time
    /// reference loops (`scalar.rs`) on `mdp`: the same sweep counts, values (bit for bit) and
    /// policies, for both routines.
    fn assert_paths_match_scalar(mdp: &Mdp, gamma: f64, bonus: Option<f64>) -> Result<(), TestCaseError> {
        let (ns, na) = (mdp.n_states(), mdp.n_actions());
        let row_bonus: Option<Vec<f64>> = bonus.map(|b| (0..ns * na).map(|row| b / (2.0 + row as f64)).collect());
        let bits = |x: &[f64]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();

        let mut q_slow = vec![0.0; ns * na];
        let mut scalar_q = QIterationWorkspace::with_path(ns, na, SimdPath::Scalar);
        prop_assert_eq!(scalar_q.path(), SimdPath::Scalar);
        let (q_sweeps_slow, q_work_slow) = work::counted(|| scalar_q.solve(mdp.view(), gamma, 250, 1e-2, &mut q_slow));
        let (mut v_slow, mut pi_slow) = (vec![0.0; ns], vec![0; ns]);
        let (vi_sweeps_slow, vi_work_slow) = work::counted(|| {
            ValueIterationWorkspace::with_path(ns, na, SimdPath::Scalar).solve(
                mdp.view(),
                row_bonus.as_deref(),
                gamma,
                1e-4,
                &mut v_slow,
                &mut pi_slow,
            )
        });
        // The scalar path's two-lane kernel against the row-at-a-time reference loops.
        let mut rows = scalar::ScalarRows::new(ns, na);
        rows.pack(mdp.view(), None);
        let mut q_rows = vec![0.0; ns * na];
        prop_assert_eq!(
            rows.q_iteration(gamma, 250, 1e-2, &mut q_rows),
            q_sweeps_slow,
            "row loops' Q-iteration sweeps"
        );
        prop_assert_eq!(bits(&q_rows), bits(&q_slow), "row loops' Q-iteration values");
        rows.pack(mdp.view(), row_bonus.as_deref());
        let (mut v_rows, mut pi_rows) = (vec![0.0; ns], vec![0; ns]);
        let sweeps = rows.value_iteration(gamma, 1e-4, GUEZ_VI_MAX_SWEEPS, &mut v_rows, &mut pi_rows);
        prop_assert_eq!(sweeps, vi_sweeps_slow, "row loops' value-iteration sweeps");
        prop_assert_eq!(&pi_rows, &pi_slow, "row loops' greedy policy");
        prop_assert_eq!(bits(&v_rows), bits(&v_slow), "row loops' value-iteration values");
        // The work counted is rows and support entries times sweeps, on every path alike.
        let entries: usize = (0..ns * na).map(|row| mdp.view().support.row(row).len()).sum();
        prop_assert_eq!(q_work_slow.get(Unit::QRowSweeps), (ns * na * q_sweeps_slow) as u64);
        prop_assert_eq!(q_work_slow.get(Unit::QEntrySweeps), (entries * q_sweeps_slow) as u64);
        prop_assert_eq!(vi_work_slow.get(Unit::ViEntrySweeps), (entries * vi_sweeps_slow) as u64);

        for path in runnable_vector_paths() {
            let mut q_fast = vec![0.0; ns * na];
            let mut ws = QIterationWorkspace::with_path(ns, na, path);
            let expected = path.best_at_most(ns, na);
            prop_assert!(expected == path || !path.serves(ns, na));
            prop_assert_eq!(ws.path(), expected);
            let (sweeps, q_work) = work::counted(|| ws.solve(mdp.view(), gamma, 250, 1e-2, &mut q_fast));
            prop_assert_eq!(sweeps, q_sweeps_slow, "{} Q-iteration sweeps", path);
            prop_assert_eq!(q_work, q_work_slow, "{} Q-iteration work", path);
            prop_assert_eq!(bits(&q_fast), bits(&q_slow), "{} Q-iteration values", path);

            let (mut v_fast, mut pi_fast) = (vec![0.0; ns], vec![0; ns]);
            let mut ws = ValueIterationWorkspace::with_path(ns, na, path);
            prop_assert_eq!(ws.path(), expected);
            let (sweeps, vi_work) =
                work::counted(|| ws.solve(mdp.view(), row_bonus.as_deref(), gamma, 1e-4, &mut v_fast, &mut pi_fast));
            prop_assert_eq!(sweeps, vi_sweeps_slow, "{} value-iteration sweeps", path);
            prop_assert_eq!(vi_work, vi_work_slow, "{} value-iteration work", path);
            prop_assert_eq!(&pi_fast, &pi_slow, "{} greedy policy", path);
            prop_assert_eq!(bits(&v_fast), bits(&v_slow), "{} value-iteration values", path);
        }
        Ok(())
    }

    proptest::proptest! {
        /// The scalar path and every vectorised path this CPU runs give bit for bit the values,
        /// policies and sweep counts of the row-at-a-time reference loops, for every model size
        /// (larger models fall back to the scalar path, which the test also checks by asking for
        /// each path at every size).
        #[test]
        fn vectorised_sweeps_are_bit_identical_to_the_scalar_loops(
            n_states in 1usize..40, n_actions in 1usize..6, seed in 0u64..u64::MAX,
            gamma in 0.5f64..0.99, bonus in proptest::option::of(0.0f64..3.0),
        ) {
            assert_paths_match_scalar(&random_model(n_states, n_actions, seed), gamma, bonus)?;
        }

        /// The same on Grid-like boards of 4 to 40 states: sparse rows of unequal widths, as the
        /// benchmark's problems have (the random models above are mostly dense).
        #[test]
        fn vectorised_sweeps_are_bit_identical_on_grid_like_models(
            rows in 2usize..=8, cols in 2usize..=8, seed in 0u64..u64::MAX,
            gamma in 0.5f64..0.99, bonus in proptest::option::of(0.0f64..3.0),
        ) {
            proptest::prop_assume!(rows * cols <= 40);
            assert_paths_match_scalar(&grid_like_model(rows, cols, seed), gamma, bonus)?;
        }
    }

    proptest::proptest! {
        /// The same on models whose supports depend on the state only (GC, GDL), of one to 12
        /// states: the two-lane kernel's shared fetches of `gamma V`, at every width it
        /// specialises (1 to 5) and above.
        #[test]
        fn vectorised_sweeps_are_bit_identical_on_state_support_models(
            n_states in 1usize..=12, n_actions in 1usize..=5, seed in 0u64..u64::MAX,
            gamma in 0.5f64..0.99, bonus in proptest::option::of(0.0f64..3.0),
        ) {
            assert_paths_match_scalar(&state_support_model(n_states, n_actions, seed), gamma, bonus)?;
        }
    }

    #[test]
    fn each_path_serves_the_benchmark_problems_where_the_cpu_allows() {
        // Not a speed test: the wiring, without which the bit-identity property test would
        // compare the scalar path with itself.
        for name in ["GC", "GDL", "Grid"] {
            let fdm = crate::problems::distribution(name).unwrap().fdm;
            let (ns, na) = (fdm.n_states(), fdm.n_actions());
            for path in SimdPath::ALL {
                // Only the CPU limits the path.
                let expected = path.best_at_most(ns, na);
                assert!(expected == path || !path.is_available(), "{name} {path}");
                assert_eq!(QIterationWorkspace::with_path(ns, na, path).path(), expected, "{name} {path}");
                assert_eq!(ValueIterationWorkspace::with_path(ns, na, path).path(), expected, "{name} {path}");
            }
        }
        #[cfg(target_arch = "x86_64")]
        assert_eq!(SimdPath::Avx2.is_available(), std::arch::is_x86_feature_detected!("avx2"));
        #[cfg(target_arch = "x86_64")]
        assert!(!SimdPath::Neon.is_available());
        // A model too large for AVX-512's registers takes a path before it (AVX2, NEON or the
        // scalar loops, whichever the CPU runs).
        let fallback = QIterationWorkspace::with_path(33, 2, SimdPath::Avx512).path();
        assert!(fallback < SimdPath::Avx512 && fallback.is_available());
        // AVX2 serves every size (the baseline kernel), where it is built.
        #[cfg(target_arch = "x86_64")]
        assert!(SimdPath::Avx2.serves(17, 2) && SimdPath::Avx2.serves(40, 5));
    }

    /// On aarch64 the NEON path is there and taken for every problem and model size, so that the
    /// bit-identity property tests above compare it with the row loops (scripts/aarch64-check.sh
    /// runs this test by name, so a build that lost the path fails there).
    #[cfg(target_arch = "aarch64")]
    #[test]
    fn aarch64_takes_the_neon_path() {
        assert!(SimdPath::Neon.is_available());
        assert_eq!(SimdPath::fastest_available(), SimdPath::Neon);
        assert_eq!(runnable_vector_paths(), vec![SimdPath::Neon]);
        for (ns, na) in [(1, 1), (5, 3), (9, 2), (25, 4), (40, 5)] {
            assert_eq!(QIterationWorkspace::with_path(ns, na, SimdPath::Neon).path(), SimdPath::Neon);
            assert_eq!(ValueIterationWorkspace::with_path(ns, na, SimdPath::Neon).path(), SimdPath::Neon);
        }
        // An x86-64 path asked for falls back to NEON.
        assert_eq!(SimdPath::resolve(Some("avx512")).0, SimdPath::Neon);
        assert_paths_match_scalar(&grid_like_model(5, 5, 7), 0.95, Some(1.0)).unwrap();
        assert_paths_match_scalar(&random_model(7, 3, 11), 0.95, None).unwrap();
    }

    #[test]
    fn the_environment_variable_names_a_path_or_is_reported() {
        let fastest = SimdPath::fastest_available();
        assert_eq!(SimdPath::resolve(None), (fastest, None));
        assert_eq!(SimdPath::resolve(Some("auto")), (fastest, None));
        assert_eq!(SimdPath::resolve(Some(" ")), (fastest, None));
        assert_eq!(SimdPath::resolve(Some("scalar")), (SimdPath::Scalar, None));
        assert_eq!(SimdPath::resolve(Some("SCALAR")), (SimdPath::Scalar, None));
        for path in SimdPath::ALL {
            let (chosen, warning) = SimdPath::resolve(Some(path.name()));
            if path.is_available() {
                assert_eq!((chosen, warning), (path, None));
            } else {
                assert!(chosen < path && chosen.is_available());
                assert!(warning.unwrap().contains("cannot run"));
            }
        }
        let (chosen, warning) = SimdPath::resolve(Some("sse9"));
        assert_eq!(chosen, fastest);
        assert!(warning.unwrap().contains("BBRL_SIMD=sse9 is not a vector path"));
    }

    #[test]
    fn finite_horizon_evaluation_of_a_deterministic_loop() {
        // One state, reward 1 per step: v_T = (1 - gamma^T) / (1 - gamma).
        let mdp = Mdp::new(1, 1, vec![1.0], vec![1.0], Some(0)).unwrap();
        let v = evaluate_policy_finite(mdp.view(), &[1.0], 0.9, 10);
        assert!((v[0] - (1.0 - 0.9f64.powi(10)) / 0.1).abs() < 1e-12);
    }
}
