//! Work counters: how much an agent computed, in units that do not depend on the machine.
//!
//! A CPU time says how long a computation took on one machine under one load; the same seeded
//! computation repeated gives another time, and another CPU another again. The budget maps need a
//! cost that is the same on every run, so each routine that does an agent's work also counts it
//! here, in [`Unit`]s (sweeps times rows of a value iteration, tree nodes created, Gamma variates
//! drawn, formula evaluations, ...). Counts are integers that depend only on the seeded
//! computation: the same on every run, at every thread count and on every vector path (a sweep
//! is counted per row and support entry, never per vector lane). A per-machine calibration (in
//! Python, `bbrl.analysis.cost`) turns them into seconds.
//!
//! The counters are per thread: routines add to the calling thread's counters (one
//! thread-local addition per sweep, search or draw of a row, never per inner-loop step), and a
//! measurement reads them before and after the measured span ([`Work::delta_since`]). A
//! trajectory runs on one thread; work fanned out over worker threads (OPPS-DS's parallel first
//! round of pulls) is measured on each worker with [`counted`] and what ran on other threads is
//! added back to the calling thread with [`add_all`], so that the caller's span counts it once
//! whatever the thread count.

use std::cell::Cell;

/// A unit of work. The discriminant is the index in [`Work`] and in [`UNITS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(usize)]
pub enum Unit {
    /// Decisions of a trajectory (the protocol's loop: one act, one environment step, one observe).
    Decisions,
    /// BBRL Q-iteration (SPEC 2.1): state-action rows backed up, summed over sweeps.
    QRowSweeps,
    /// BBRL Q-iteration: support entries (next states) backed up, summed over sweeps.
    QEntrySweeps,
    /// Guez value iteration (SPEC 2.2), SBOSS's merged model included: rows backed up, summed over sweeps.
    ViRowSweeps,
    /// Guez value iteration: support entries backed up, summed over sweeps.
    ViEntrySweeps,
    /// Gamma variates drawn (Dirichlet rows of sampled models: PSRL, SBOSS, MDP draws).
    GammaVariates,
    /// Search-tree nodes created (BAMCP's V-nodes, BFS3's FSSS nodes).
    TreeNodes,
    /// Search-tree edges stored (BFS3's sampled children, BAMCP's child slots: one per support
    /// state of each action of a node, so wide posterior rows cost more per node).
    TreeEdges,
    /// Simulated steps of a planner (BAMCP's tree and rollout steps, BFS3's rollout levels).
    SimulatedSteps,
    /// Tokens of an index formula evaluated (Formula, OPPS-DS): its length per action and decision.
    FormulaTokens,
    /// Calls into an agent written in Python (act, observe, task and episode starts).
    ForeignCalls,
    /// Entries of an agent's model read or reset outside a sweep: SBOSS's deviation test and
    /// sample count after each observation (a row's S states and its support) and its task reset
    /// (the S·A·S counts). They make the cost of a decision grow with the model's size even when
    /// nothing is solved.
    ModelEntries,
    /// Calls of a solver (Q-iteration, value iteration, SBOSS's merged solve): what a solve costs
    /// besides its sweeps (packing the model for the sweeps, the cold start, writing the result),
    /// which agents that re-solve after every transition pay at every decision.
    Solves,
    /// Support entries of each solved model, once per call (not per sweep): the model a solve
    /// packs before its first sweep. With [`Unit::Solves`], the part of a solve's cost that grows
    /// with the model's size but not with the number of sweeps.
    SolveEntries,
    /// Support entries walked by draws from rows of three states or more outside a sweep: BAMCP's
    /// simulated steps on the posterior's wide rows (uniform priors), each a walk over the row's
    /// weights, where a row of one or two states costs a simulated step alone; BFS3's draws of a
    /// node's children and of its root samples, each a walk over the row's cumulative weights
    /// (summed once more when the row holds planning counts).
    DrawEntries,
    /// The size units below are another unit times the task's number of states or actions,
    /// named `<unit>_by_states` and `<unit>_by_actions` (the Python calibration finds them by
    /// those names and fits each only where it lowers the leave-one-out error).
    ///
    /// Decisions times the number of states of the task. The same count of decisions costs more
    /// on a larger model (the agent's per-state tables and the environment's rows no longer sit in
    /// the nearest caches; an observe updates a row as wide as the state set): without it one
    /// price per decision cannot fit GC (5 states), GDL (9) and Grid (25) at once.
    DecisionsByStates,
    /// Decisions times the number of actions: the scans over a state's actions (a greedy or
    /// index choice, a tie-break) that every act makes.
    DecisionsByActions,
    /// Support entries of each solved model times its number of states, once per call: the part
    /// of re-solving a model at every decision that grows faster than its entries (on the
    /// calibration's machine, packing a model of S states costs more per entry as S grows).
    SolveEntriesByStates,
    /// Simulated steps times the number of actions: a planner's choice among the actions at
    /// each simulated step (BAMCP's UCB1 over a node's actions, BFS3's bounds over them).
    SimulatedStepsByActions,
}

/// Every unit, in index order.
pub const UNITS: [Unit; 19] = [
    Unit::Decisions,
    Unit::QRowSweeps,
    Unit::QEntrySweeps,
    Unit::ViRowSweeps,
    Unit::ViEntrySweeps,
    Unit::GammaVariates,
    Unit::TreeNodes,
    Unit::TreeEdges,
    Unit::SimulatedSteps,
    Unit::FormulaTokens,
    Unit::ForeignCalls,
    Unit::ModelEntries,
    Unit::Solves,
    Unit::SolveEntries,
    Unit::DrawEntries,
    Unit::DecisionsByStates,
    Unit::DecisionsByActions,
    Unit::SolveEntriesByStates,
    Unit::SimulatedStepsByActions,
];

/// The number of units.
pub const N_UNITS: usize = UNITS.len();

impl Unit {
    /// The unit's name in result files (`work_<name>` columns) and calibrations.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Decisions => "decisions",
            Unit::QRowSweeps => "q_row_sweeps",
            Unit::QEntrySweeps => "q_entry_sweeps",
            Unit::ViRowSweeps => "vi_row_sweeps",
            Unit::ViEntrySweeps => "vi_entry_sweeps",
            Unit::GammaVariates => "gamma_variates",
            Unit::TreeNodes => "tree_nodes",
            Unit::TreeEdges => "tree_edges",
            Unit::SimulatedSteps => "simulated_steps",
            Unit::FormulaTokens => "formula_tokens",
            Unit::ForeignCalls => "foreign_calls",
            Unit::ModelEntries => "model_entries",
            Unit::Solves => "solves",
            Unit::SolveEntries => "solve_entries",
            Unit::DrawEntries => "draw_entries",
            Unit::DecisionsByStates => "decisions_by_states",
            Unit::DecisionsByActions => "decisions_by_actions",
            Unit::SolveEntriesByStates => "solve_entries_by_states",
            Unit::SimulatedStepsByActions => "simulated_steps_by_actions",
        }
    }
}

/// A count per [`Unit`]: plain integers, copied by value, no allocation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Work(pub [u64; N_UNITS]);

impl Work {
    /// The count of `unit`.
    pub fn get(&self, unit: Unit) -> u64 {
        self.0[unit as usize]
    }

    /// This thread's counters now (they only grow, wrapping after 2^64).
    pub fn now() -> Self {
        COUNTERS.with(|counters| Work(std::array::from_fn(|i| counters[i].get())))
    }

    /// The work done on this thread since `start` (a [`Work::now`] of the same thread).
    pub fn delta_since(start: &Work) -> Self {
        let now = Self::now();
        Work(std::array::from_fn(|i| now.0[i].wrapping_sub(start.0[i])))
    }

    /// `self - other`, unit by unit (wrapping: for counts where `other` is part of `self`).
    pub fn minus(&self, other: &Work) -> Self {
        Work(std::array::from_fn(|i| self.0[i].wrapping_sub(other.0[i])))
    }

    /// The sum of two counts (saturating: a count never wraps to a small number).
    pub fn plus(&self, other: &Work) -> Self {
        Work(std::array::from_fn(|i| self.0[i].saturating_add(other.0[i])))
    }
}

thread_local! {
    static COUNTERS: [Cell<u64>; N_UNITS] = const { [const { Cell::new(0) }; N_UNITS] };
}

/// Adds `amount` of `unit` to this thread's counters.
#[inline]
pub fn add(unit: Unit, amount: u64) {
    COUNTERS.with(|counters| {
        let cell = &counters[unit as usize];
        cell.set(cell.get().wrapping_add(amount));
    });
}

/// Counts `decisions` decisions on a task of `n_states` states and `n_actions` actions
/// ([`Unit::Decisions`] and the two units that scale it by the task's size).
pub fn add_decisions(decisions: u64, n_states: usize, n_actions: usize) {
    add(Unit::Decisions, decisions);
    add(Unit::DecisionsByStates, decisions.saturating_mul(n_states as u64));
    add(Unit::DecisionsByActions, decisions.saturating_mul(n_actions as u64));
}

/// Counts one solve of a model of `n_entries` support entries over `n_states` states
/// ([`Unit::Solves`], [`Unit::SolveEntries`] and [`Unit::SolveEntriesByStates`]).
pub fn add_solve(n_entries: u64, n_states: usize) {
    add(Unit::Solves, 1);
    add(Unit::SolveEntries, n_entries);
    add(Unit::SolveEntriesByStates, n_entries.saturating_mul(n_states as u64));
}

/// Counts `steps` simulated steps of a planner choosing among `n_actions` actions
/// ([`Unit::SimulatedSteps`] and [`Unit::SimulatedStepsByActions`]).
pub fn add_simulated_steps(steps: u64, n_actions: usize) {
    add(Unit::SimulatedSteps, steps);
    add(Unit::SimulatedStepsByActions, steps.saturating_mul(n_actions as u64));
}

/// Adds every count of `work` to this thread's counters (work measured on other threads).
pub fn add_all(work: &Work) {
    for unit in UNITS {
        add(unit, work.get(unit));
    }
}

/// Runs `f` and returns its result with the work it did on this thread.
pub fn counted<T>(f: impl FnOnce() -> T) -> (T, Work) {
    let start = Work::now();
    let out = f();
    (out, Work::delta_since(&start))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_in_index_order_with_distinct_names() {
        for (i, unit) in UNITS.iter().enumerate() {
            assert_eq!(*unit as usize, i);
        }
        let names: std::collections::BTreeSet<_> = UNITS.iter().map(|u| u.name()).collect();
        assert_eq!(names.len(), N_UNITS);
    }

    #[test]
    fn counts_are_per_thread_and_measured_as_deltas() {
        let ((), here) = counted(|| {
            add(Unit::TreeNodes, 3);
            add(Unit::TreeNodes, 4);
            let other = std::thread::spawn(|| counted(|| add(Unit::GammaVariates, 5)).1).join().unwrap();
            assert_eq!(other.get(Unit::GammaVariates), 5);
            add_all(&other);
        });
        assert_eq!(here.get(Unit::TreeNodes), 7);
        assert_eq!(here.get(Unit::GammaVariates), 5);
        assert_eq!(here.get(Unit::Decisions), 0);
        assert_eq!(here.plus(&here).get(Unit::TreeNodes), 14);
    }
}
