//! Fixtures shared by the planning agents' tests: a small chain MDP with known optimal actions,
//! priors around it, a driver, and an allocation counter.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use crate::agent::{Agent, Setting, TaskContext, Transition};
use crate::model::fdm::Fdm;
use crate::model::mdp::Mdp;
use crate::rng::stream;

pub(crate) const GAMMA: f64 = 0.95;

pub(crate) fn setting() -> Setting {
    Setting { gamma: GAMMA, horizon: 50 }
}

/// A 3-state chain with a trap (state 3), 2 actions. Action 0 ("forward") moves 0 -> 1 -> 2
/// with probability 0.8 (else stays), and in 2 stays with reward 1; action 1 ("bail out")
/// pays 0.3 at once and falls into the absorbing, rewardless trap. Forward is optimal in
/// 0, 1 and 2 at any horizon beyond 3 steps, by a wide margin at 15.
pub(crate) fn chain_mdp() -> (Vec<f64>, Vec<f64>) {
    let (ns, na) = (4, 2);
    let mut p = vec![0.0; ns * na * ns];
    let mut r = vec![0.0; ns * na * ns];
    let idx = |s: usize, a: usize, y: usize| (s * na + a) * ns + y;
    for s in 0..3 {
        p[idx(s, 0, (s + 1).min(2))] += 0.8;
        p[idx(s, 0, s)] += 0.2;
        p[idx(s, 1, 3)] = 1.0;
        r[idx(s, 1, 3)] = 0.3;
    }
    r[idx(2, 0, 2)] = 1.0;
    p[idx(3, 0, 3)] = 1.0;
    p[idx(3, 1, 3)] = 1.0;
    (p, r)
}

/// The prior with concentration 1 on each possible transition of `p`.
pub(crate) fn vague(p: &[f64], r: &[f64], ns: usize, na: usize) -> Fdm {
    Fdm::new(ns, na, p.iter().map(|&x| if x > 0.0 { 1.0 } else { 0.0 }).collect(), r.to_vec(), Some(0)).unwrap()
}

/// A prior that is (nearly) a point mass on the MDP `p`: theta = 1e6 p.
pub(crate) fn point_mass(p: &[f64], r: &[f64], ns: usize, na: usize) -> Fdm {
    Fdm::new(ns, na, p.iter().map(|x| x * 1e6).collect(), r.to_vec(), Some(0)).unwrap()
}

/// The actions `agent` (trained on `prior`) plays over `steps` steps of the chain MDP, with
/// agent and environment streams from `seed`, and the action values behind each decision.
pub(crate) fn play<A: Agent>(
    agent: &mut A,
    values: impl Fn(&A) -> &[f64],
    prior: &Fdm,
    seed: u64,
    steps: usize,
) -> Vec<(usize, Vec<f64>)> {
    let (p, r) = chain_mdp();
    let mdp = Mdp::new(4, 2, p, r, Some(0)).unwrap();
    let (mut rng, mut env) = (stream(seed, 0, 0), stream(seed, 1, 0));
    agent.learn_offline(prior, setting(), &mut rng).unwrap();
    agent.start_task(&TaskContext { setting: setting(), true_mdp: None }, &mut rng).unwrap();
    let mut s = 0;
    (0..steps)
        .map(|_| {
            let a = agent.act(s, &mut rng).unwrap();
            let decision = (a, values(agent).to_vec());
            let (y, reward) = mdp.step(s, a, &mut env);
            agent.observe(Transition { state: s, action: a, reward, next_state: y }, &mut rng).unwrap();
            s = y;
            decision
        })
        .collect()
}

/// The test binary's allocator: the system one, counting allocations per thread so that a test
/// can check that a piece of code allocates nothing whatever the other tests do meanwhile.
struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `alloc` above, i.e. by the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The number of heap allocations (and reallocations) `f` makes on this thread.
pub(crate) fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

/// Checks that `agent`, trained on the vague chain prior and reset, allocates nothing while it
/// decides and learns for 30 steps on the chain MDP (the first decision included).
pub(crate) fn assert_no_allocation_per_step(agent: &mut dyn Agent) {
    let (p, r) = chain_mdp();
    let mdp = Mdp::new(4, 2, p.clone(), r.clone(), Some(0)).unwrap();
    let (mut rng, mut env) = (stream(1, 0, 0), stream(1, 1, 0));
    agent.learn_offline(&vague(&p, &r, 4, 2), setting(), &mut rng).unwrap();
    agent.start_task(&TaskContext { setting: setting(), true_mdp: None }, &mut rng).unwrap();
    let mut probabilities = [0.0; 2];
    let mut s = 0;
    let count = allocations(|| {
        for _ in 0..30 {
            let a = agent.act(s, &mut rng).unwrap();
            agent.action_probabilities(s, &mut probabilities).unwrap();
            let (y, reward) = mdp.step(s, a, &mut env);
            agent.observe(Transition { state: s, action: a, reward, next_state: y }, &mut rng).unwrap();
            s = y;
        }
    });
    assert_eq!(count, 0, "{} allocated {count} times in 30 steps", agent.name());
}
