//! Fixtures of the exploration baselines' tests: a deterministic chain with a distant reward, a
//! driver that checks the learned greedy policy, and a registry-wide allocation check.

use crate::agent::{Agent, Setting, TaskContext, Transition};
use crate::model::fdm::Fdm;
use crate::model::mdp::Mdp;
use crate::rng::stream;

/// The chain's length.
pub(crate) const CHAIN: usize = 5;

/// A deterministic chain of [`CHAIN`] states, 2 actions: action 1 moves right (state 4 stays
/// and pays 1 per step), action 0 returns to state 0 and pays 0.05. From state 0 a myopic agent
/// takes action 0; the optimal policy (gamma = 0.9) is action 1 everywhere. The prior has
/// concentration 1 on every next state (nothing known of the dynamics).
pub(crate) fn deterministic_chain() -> (Mdp, Fdm) {
    let (ns, na) = (CHAIN, 2);
    let mut p = vec![0.0; ns * na * ns];
    let mut r = vec![0.0; ns * na * ns];
    let idx = |s: usize, a: usize, y: usize| (s * na + a) * ns + y;
    for s in 0..ns {
        p[idx(s, 0, 0)] = 1.0;
        r[idx(s, 0, 0)] = 0.05;
        let y = (s + 1).min(ns - 1);
        p[idx(s, 1, y)] = 1.0;
        if s == ns - 1 {
            r[idx(s, 1, y)] = 1.0;
        }
    }
    let mdp = Mdp::new(ns, na, p, r.clone(), Some(0)).unwrap();
    let prior = Fdm::new(ns, na, vec![1.0; ns * na * ns], r, Some(0)).unwrap();
    (mdp, prior)
}

pub(crate) const CHAIN_SETTING: Setting = Setting { gamma: 0.9, horizon: 2000 };

/// Runs `agent` for `steps` steps on the chain (seed 7) and checks that it has learned the
/// optimal behaviour within that bound: at least 95% of the last 200 decisions gave the optimal
/// action 1 a probability of at least 0.85 in `action_probabilities` (an optimistic agent may
/// still try a pair whose bonus is not yet spent). Returns the number of rewarded steps.
pub(crate) fn learns_chain(agent: &mut dyn Agent, steps: usize) -> usize {
    let (mdp, prior) = deterministic_chain();
    let setting = Setting { horizon: steps, ..CHAIN_SETTING };
    let (mut rng, mut env) = (stream(7, 0, 0), stream(7, 1, 0));
    agent.learn_offline(&prior, setting, &mut rng).unwrap();
    agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
    let (mut s, mut rewarded, mut late_optimal, mut probabilities) = (0, 0, 0, [0.0; 2]);
    for t in 0..steps {
        agent.action_probabilities(s, &mut probabilities).unwrap();
        let a = agent.act(s, &mut rng).unwrap();
        if t + 200 >= steps && probabilities[1] >= 0.85 {
            late_optimal += 1;
        }
        let (y, reward) = mdp.step(s, a, &mut env);
        rewarded += usize::from(reward == 1.0);
        agent.observe(Transition { state: s, action: a, reward, next_state: y }, &mut rng).unwrap();
        s = y;
    }
    assert!(late_optimal >= 190, "{}: optimal in {late_optimal} of the last 200 of {steps} steps", agent.name());
    rewarded
}

/// Checks that every example setting of `spec` allocates nothing per step, first plan included.
pub(crate) fn assert_examples_allocate_nothing(spec: &crate::agents::KindSpec) {
    for example in spec.examples {
        let mut agent = crate::agents::build(spec.kind, &example.params()).unwrap();
        crate::agents::planning_test_support::assert_no_allocation_per_step(agent.as_mut());
    }
}

/// A 40-state, 3-action prior whose rewards are a default per row (two classes) with a few
/// exceptions, and whose rows reach 4 random next states: large enough for the structured reward
/// rows (agents/reward_rows.rs).
pub(crate) fn structured_prior() -> Fdm {
    let (ns, na) = (40, 3);
    let mut rng = stream(11, 0, 0);
    let mut theta = vec![0.0; ns * na * ns];
    let mut rewards = vec![0.0; ns * na * ns];
    for row in 0..ns * na {
        let default = if row % 2 == 0 { -1.0 } else { 0.0 };
        rewards[row * ns..(row + 1) * ns].fill(default);
        for _ in 0..4 {
            let y = crate::agents::uniform_below(ns as u32, &mut rng) as usize;
            theta[row * ns + y] += 1.0;
        }
        if row % 5 == 0 {
            let y = crate::agents::uniform_below(ns as u32, &mut rng) as usize;
            rewards[row * ns + y] = 1.0;
        }
    }
    Fdm::new(ns, na, theta, rewards, Some(0)).unwrap()
}

/// Trains `agent` on `prior`, calls `after_training`, then plays 300 steps on an MDP drawn from
/// it (episodes of 20 steps from state 0 when `episodic`): each decision's action and `q_bits`
/// of the agent in the state decided.
pub(crate) fn decisions<A: Agent>(
    agent: &mut A,
    prior: &Fdm,
    episodic: bool,
    after_training: impl FnOnce(&mut A),
    q_bits: impl Fn(&A, usize) -> Vec<u64>,
) -> Vec<(usize, Vec<u64>)> {
    let mdp = prior.sample_seeded(3);
    let setting = Setting { gamma: 0.95, horizon: 300 };
    let (mut rng, mut env) = (stream(2, 0, 0), stream(2, 1, 0));
    agent.learn_offline(prior, setting, &mut rng).unwrap();
    after_training(agent);
    agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
    let (mut s, mut trace) = (0, Vec::new());
    for t in 0..300 {
        if episodic && t % 20 == 0 {
            agent.start_episode(0, &mut rng).unwrap();
            s = 0;
        }
        let a = agent.act(s, &mut rng).unwrap();
        trace.push((a, q_bits(agent, s)));
        let (y, reward) = mdp.step(s, a, &mut env);
        agent.observe(Transition { state: s, action: a, reward, next_state: y }, &mut rng).unwrap();
        s = y;
    }
    trace
}

/// Checks that `agent`, trained on `prior` and reset, allocates nothing over 300 steps on an MDP
/// drawn from it (episodes of 20 steps when `episodic`; the first decision included, the first
/// episode's start not: it sizes the staged tables once).
pub(crate) fn assert_no_allocation_on(agent: &mut dyn Agent, prior: &Fdm, episodic: bool) {
    let mdp = prior.sample_seeded(3);
    let setting = Setting { gamma: 0.95, horizon: 300 };
    let (mut rng, mut env) = (stream(2, 0, 0), stream(2, 1, 0));
    agent.learn_offline(prior, setting, &mut rng).unwrap();
    agent.start_task(&TaskContext { setting, true_mdp: None }, &mut rng).unwrap();
    let mut probabilities = vec![0.0; prior.n_actions()];
    let mut s = 0;
    if episodic {
        agent.start_episode(0, &mut rng).unwrap();
    }
    let count = crate::agents::planning_test_support::allocations(|| {
        for t in 1..=300 {
            if episodic && t % 20 == 0 {
                agent.start_episode(0, &mut rng).unwrap();
                s = 0;
            }
            let a = agent.act(s, &mut rng).unwrap();
            agent.action_probabilities(s, &mut probabilities).unwrap();
            let (y, reward) = mdp.step(s, a, &mut env);
            agent.observe(Transition { state: s, action: a, reward, next_state: y }, &mut rng).unwrap();
            s = y;
        }
    });
    assert_eq!(count, 0, "{} allocated {count} times in 300 steps (episodic: {episodic})", agent.name());
}
