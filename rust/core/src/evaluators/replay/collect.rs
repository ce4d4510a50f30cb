//! Writing a log by running a stationary policy on a finite environment (for tests, examples and
//! benchmarks of the evaluators).

use rand::Rng as _;

use super::dataset::check_row;
use super::{Dataset, EpisodeEnd, LogColumns, LoggingInput};
use crate::envs::{Env, FiniteEnv};
use crate::error::Result;
use crate::invalid;
use crate::rng::{purpose, stream};

/// Draws an action from a probability row with one uniform.
#[inline]
pub(super) fn draw(row: &[f64], u: f64) -> usize {
    let mut cumul = 0.0;
    let mut last = 0;
    for (a, &p) in row.iter().enumerate() {
        if p > 0.0 {
            cumul += p;
            last = a;
            if u < cumul {
                return a;
            }
        }
    }
    last
}

/// `n_episodes` episodes of the stationary `policy` ((S, A), rows summing to 1) on `env`, each
/// from a state drawn from the environment's start law; an episode ends by `end` and must do so
/// within `max_steps`. A log of an environment with a single start state has it as its fixed
/// start; otherwise the log is replayed from its own start states.
/// Streams: `(seed, REPLAY_COLLECT_ENV, 0)` for the environment, `(seed, REPLAY_COLLECT_POLICY,
/// 0)` for the actions. The log carries the policy as its table.
pub fn collect(
    env: &FiniteEnv,
    policy: &[f64],
    n_episodes: usize,
    end: EpisodeEnd,
    max_steps: usize,
    seed: u64,
) -> Result<Dataset> {
    let (s_count, a_count) = (env.mdp().n_states(), env.n_actions());
    if policy.len() != s_count * a_count {
        return Err(invalid!("the policy has {} entries, expected {s_count} x {a_count}", policy.len()));
    }
    for (s, row) in policy.chunks_exact(a_count).enumerate() {
        check_row(row, &|| format!("logging policy, state {s}"))?;
    }
    let starts: Vec<usize> = (0..s_count).filter(|&s| env.start_law()[s] > 0.0).collect();
    let fixed_start = match starts[..] {
        [start] => Some(start),
        _ => None,
    };
    if n_episodes == 0 {
        return Err(invalid!("n_episodes must be >= 1"));
    }
    let mut env_rng = stream(seed, purpose::REPLAY_COLLECT_ENV, 0);
    let mut policy_rng = stream(seed, purpose::REPLAY_COLLECT_POLICY, 0);
    let (mut episode, mut t, mut state, mut action, mut reward, mut next, mut terminal) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for e in 0..n_episodes {
        // A single start state costs no draw.
        let start = env.reset(&mut env_rng);
        let mut s = start;
        for step in 0.. {
            if step == max_steps {
                return Err(invalid!("an episode did not end within max_steps = {max_steps} steps"));
            }
            let row = &policy[s * a_count..(s + 1) * a_count];
            let a = draw(row, policy_rng.random());
            let out = env.step(&s, a, &mut env_rng);
            episode.push(e as i64);
            t.push(step as i64);
            state.push(s as i64);
            action.push(a as i64);
            reward.push(out.reward);
            next.push(out.next_state as i64);
            terminal.push(out.terminal);
            if end.ends(step + 1, out.next_state, out.terminal, start) {
                break;
            }
            s = out.next_state;
        }
    }
    let columns = LogColumns {
        episode: &episode,
        t: &t,
        state: &state,
        action: &action,
        reward: &reward,
        next_state: &next,
        terminal: Some(&terminal),
    };
    Dataset::new(s_count, a_count, fixed_start, columns, LoggingInput::Table(policy))
}
