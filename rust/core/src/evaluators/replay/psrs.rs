//! Per-state rejection sampling (Mandel et al. 2016, Algorithm 2): one stream of logged (action,
//! reward, next state) per state, in a random order. At a state the agent reveals its action
//! distribution pi_b; a popped row with action a is accepted with probability
//! pi_b(a) / (M pi_e(a)), M = max_a pi_b(a) / pi_e(a), so an accepted action has law pi_b and
//! each pop is accepted with probability exactly 1/M. The stream's emptiness is checked *before*
//! popping: the paper's listing pops first and stops when the stream became empty, which throws
//! away the last row of every stream and can end a run that still had data for the walk.
//!
//! [`PsrsOrder::Paper`] runs the listing's order instead (pop, then stop if the stream became
//! empty), for comparison.
//!
//! With a per-row (history-dependent) logging policy, M is the popped row's own bound, computed
//! after the pop from that row's probabilities: the accepted action still has law pi_b, and the
//! row's outcome is independent of its logging probabilities given (state, action).

use super::queue::Buckets;
use super::starts::Starts;
use super::{
    check_candidate, ratio_bound, Config, Dataset, EpisodeReturn, Episodes, LoggingPolicy, Outcome, PsrsOrder,
    StopReason,
};
use crate::agent::Transition;
use crate::error::Result;
use crate::rng::Rng;
use crate::stepper::Stepper;
use rand::Rng as _;

pub(super) fn run(
    stepper: &mut Stepper,
    data: &Dataset,
    episodes: &Episodes,
    config: &Config,
    order: PsrsOrder,
    rng: &mut Rng,
) -> Result<Outcome> {
    let steps = data.steps();
    let streams = Buckets::new(episodes, data.n_states(), |row| steps[row].state, rng);
    let mut starts = Starts::new(data, episodes, rng);
    let mut cursor = streams.offsets.clone();
    let per_row = matches!(data.logging(), LoggingPolicy::PerRow(_));
    let mut pb = vec![0.0; data.n_actions()];
    let mut out = Outcome::new(StopReason::MaxEpisodes);
    if config.trace {
        out.trace.reserve(episodes.n_rows());
    }
    loop {
        if config.max_episodes.is_some_and(|m| out.returns.len() >= m) {
            out.stop = StopReason::MaxEpisodes;
            return Ok(out);
        }
        let Some(start) = starts.pop() else {
            out.stop = StopReason::StartsExhausted;
            return Ok(out);
        };
        let first_traced = out.trace.len();
        stepper.start_episode(start)?;
        let mut state = start;
        let mut episode = EpisodeReturn::new();
        loop {
            stepper.action_probabilities(state, &mut pb)?;
            check_candidate(&pb, state)?;
            let first = streams.order.get(cursor[state]).copied();
            // M of a stationary log: one bound per visit, pi_b being fixed during the rejections.
            let state_m = match (per_row, first) {
                (false, Some(row)) => ratio_bound(&pb, data.logging_row(row).expect("known policy"), state)?,
                _ => f64::NAN,
            };
            let row = loop {
                if cursor[state] == streams.offsets[state + 1] {
                    out.trace.truncate(first_traced);
                    out.stop = StopReason::EmptyStream { state };
                    return Ok(out);
                }
                let row = streams.order[cursor[state]];
                cursor[state] += 1;
                out.tuples_used += 1;
                out.proposals += 1;
                if order == PsrsOrder::Paper && cursor[state] == streams.offsets[state + 1] {
                    // The listing's order: the pop emptied the stream, so the run ends and the
                    // popped row is thrown away.
                    out.trace.truncate(first_traced);
                    out.stop = StopReason::EmptyStream { state };
                    return Ok(out);
                }
                let pe = data.logging_row(row).expect("known policy");
                let m = if per_row { ratio_bound(&pb, pe, state)? } else { state_m };
                let a = steps[row].action;
                let u: f64 = rng.random();
                // Accept with probability pb(a) / (M pe(a)).
                if u * m * pe[a] < pb[a] {
                    break row;
                }
            };
            out.accepted += 1;
            let logged = steps[row];
            let transition =
                Transition { state, action: logged.action, reward: logged.reward, next_state: logged.next_state };
            stepper.observe(transition)?;
            if config.trace {
                out.trace.push((out.returns.len(), transition));
            }
            episode.add(logged.reward, config.gamma);
            if config.end.ends(episode.steps, logged.next_state, logged.terminal, start) {
                break;
            }
            state = logged.next_state;
        }
        out.returns.push(episode.total);
        out.lengths.push(episode.steps);
    }
}
