//! Properties the paper proves or the evaluation spec derives, with fixed seeds. Tolerances are
//! five standard deviations of the statistic under the claimed law (a false failure has
//! probability below 1e-6 per check), unless the property is exact.

use rand::Rng as _;

use super::*;
use crate::agent::{Agent, Setting, TaskContext};
use crate::agents::{build, ParamValue, Params};
use crate::envs::{river_swim, six_arms, FiniteEnv, RiverSwimVariant};
use crate::model::fdm::Fdm;
use crate::model::mdp::Mdp;
use crate::rng::{purpose, stream};

const SETTING: Setting = Setting { gamma: 0.95, horizon: 250 };

fn prior_for(env: &FiniteEnv) -> Fdm {
    let mdp = env.mdp();
    let (s, a) = (mdp.n_states(), mdp.n_actions());
    Fdm::new(s, a, vec![1.0; s * a * s], mdp.rewards().to_vec(), Some(0)).unwrap()
}

/// A built-in agent trained on the uniform prior of `env`, with agent stream `(seed, REPLAY_AGENT, 0)`.
fn stepper(kind: &str, params: &[(&str, ParamValue)], env: &FiniteEnv, seed: u64) -> Stepper {
    let params: Params = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    let mut agent = build(kind, &params).unwrap();
    let prior = prior_for(env);
    agent.learn_offline(&prior, SETTING, &mut stream(0, purpose::AGENT_OFFLINE, 0)).unwrap();
    wrap(agent, env, seed)
}

fn wrap(agent: Box<dyn Agent>, env: &FiniteEnv, seed: u64) -> Stepper {
    let mdp = env.mdp();
    Stepper::new(agent, mdp.n_states(), mdp.n_actions(), SETTING, stream(seed, purpose::REPLAY_AGENT, 0))
}

fn uniform(s: usize, a: usize) -> Vec<f64> {
    vec![1.0 / a as f64; s * a]
}

fn config(method: Method, end: EpisodeEnd) -> Config {
    Config { method, end, gamma: 1.0, max_episodes: None, trace: false }
}

fn pers(bound: MBound, max_length: Option<usize>, weighted: bool) -> Method {
    Method::Pers(PersOptions { bound, max_length, weighted })
}

fn run(st: &mut Stepper, data: &Dataset, cfg: &Config, seed: u64) -> Result<Outcome> {
    let episodes = data.episodes(cfg.end)?;
    evaluate(st, data, &episodes, cfg, &mut stream(seed, purpose::REPLAY_EVALUATOR, 0))
}

/// A one-state environment (a bandit): every action stays, with reward `rewards[a]`.
fn bandit(rewards: &[f64]) -> FiniteEnv {
    let a = rewards.len();
    let mdp = Mdp::new(1, a, vec![1.0; a], rewards.to_vec(), Some(0)).unwrap();
    FiniteEnv::new("bandit", mdp, vec![1.0], 0.9, None).unwrap()
}

/// Asserts |x - mean| <= 5 sd.
fn within(x: f64, mean: f64, sd: f64, what: &str) {
    assert!((x - mean).abs() <= 5.0 * sd, "{what}: {x} vs {mean} (sd {sd})");
}

#[test]
fn queue_and_psrs_feed_the_environment_law() {
    // Theorems 4.1 and 5.1: given (state, action), an emitted next state has the environment's
    // law. RiverSwim (Osband, 20-step episodes), uniform logging, e-Greedy (epsilon 0.5) as the
    // learner; every (s, a) pair with enough emitted steps is compared with the true P(s' | s, a)
    // (binomial proportions).
    let env = river_swim(RiverSwimVariant::Osband, 1.0).unwrap();
    let end = EpisodeEnd::Horizon(20);
    let data = collect(&env, &uniform(6, 2), 6000, end, 20, 1).unwrap();
    for method in [Method::Queue, Method::Psrs(PsrsOrder::CheckFirst)] {
        let mut st = stepper("egreedy", &[("epsilon", ParamValue::Float(0.5))], &env, 2);
        let cfg = Config { trace: true, ..config(method, end) };
        let out = run(&mut st, &data, &cfg, 3).unwrap();
        assert!(out.returns.len() > 100, "{method:?}: {}", out.returns.len());
        let mut counts = vec![0usize; 6 * 2 * 6];
        for (_, t) in &out.trace {
            counts[(t.state * 2 + t.action) * 6 + t.next_state] += 1;
        }
        let p = env.mdp().transitions();
        let mut checked = 0;
        for row in 0..12 {
            let n: usize = counts[row * 6..row * 6 + 6].iter().sum();
            if n < 200 {
                continue;
            }
            checked += 1;
            for y in 0..6 {
                let q = p[row * 6 + y];
                let f = counts[row * 6 + y] as f64 / n as f64;
                within(f, q, (q * (1.0 - q) / n as f64).sqrt() + 1e-12, &format!("{method:?} row {row} -> {y}"));
            }
        }
        assert!(checked >= 4, "{method:?}: only {checked} pairs had enough data");
    }
}

#[test]
fn psrs_accepts_each_pop_with_probability_one_over_m() {
    // One state, episodes of one step: every row is popped once, and each pop is accepted
    // independently with probability 1/M. Logging (0.5, 0.3, 0.2), candidate uniform:
    // M = (1/3) / 0.2 = 5/3, so accepted ~ Binomial(N, 3/5); accepted actions are uniform.
    let env = bandit(&[0.0, 1.0, 2.0]);
    let n = 30_000;
    let data = collect(&env, &[0.5, 0.3, 0.2], n, EpisodeEnd::ReturnToStart, 10, 4).unwrap();
    let mut st = stepper("random", &[], &env, 5);
    let cfg = Config { trace: true, ..config(Method::Psrs(PsrsOrder::CheckFirst), EpisodeEnd::ReturnToStart) };
    let out = run(&mut st, &data, &cfg, 6).unwrap();
    assert_eq!((out.proposals, out.tuples_used), (n, n));
    assert_eq!(out.stop, StopReason::EmptyStream { state: 0 });
    let p = 0.6;
    within(out.accepted as f64, n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt(), "accepted pops");
    let k = out.accepted as f64;
    for a in 0..3 {
        let hits = out.trace.iter().filter(|(_, t)| t.action == a).count() as f64;
        within(hits / k, 1.0 / 3.0, (2.0 / 9.0 / k).sqrt(), "accepted action share");
    }
}

#[test]
fn psrs_with_the_logging_policy_emits_every_complete_episode() {
    // With pi_b = pi_e every pop is accepted; under return-to-start every state's in-degree equals
    // its out-degree in the data, so the walk can only get stuck at the start state, after a whole
    // number of the data's episodes: all of them, on every run.
    let env = six_arms(0.95).unwrap();
    let data = collect(&env, &uniform(7, 6), 300, EpisodeEnd::ReturnToStart, 10_000, 7).unwrap();
    for seed in 0..20 {
        let mut st = stepper("random", &[], &env, seed);
        let out =
            run(&mut st, &data, &config(Method::Psrs(PsrsOrder::CheckFirst), EpisodeEnd::ReturnToStart), seed).unwrap();
        assert_eq!(out.returns.len(), 300, "seed {seed}");
        assert_eq!(out.accepted, out.proposals);
        assert_eq!(out.stop, StopReason::EmptyStream { state: 0 });
    }
}

#[test]
fn psrs_checks_the_stream_before_popping() {
    // One action (so every agent is the logging policy). Two logged episodes: 0 -> 1 -> 0 and
    // 0 -> 1 -> 1 -> 0. State 1's stream holds {to 0, to 1, to 0}; the self-loop is used unless it
    // comes last in the random order (probability 1/3), so P(all data used) = 2/3 exactly, and both
    // episodes are emitted on every run. Popping before the check would throw away the last row of
    // each stream: never all data used.
    let e = [0i64, 0, 1, 1, 1];
    let t = [0i64, 1, 0, 1, 2];
    let s = [0i64, 1, 0, 1, 1];
    let y = [1i64, 0, 1, 1, 0];
    let a = [0i64; 5];
    let r = [0.0; 5];
    let columns = LogColumns { episode: &e, t: &t, state: &s, action: &a, reward: &r, next_state: &y, terminal: None };
    let data = Dataset::new(2, 1, Some(0), columns, LoggingInput::Table(&[1.0, 1.0])).unwrap();
    let env = FiniteEnv::new(
        "two",
        Mdp::new(2, 1, vec![0.0, 1.0, 0.5, 0.5], vec![0.0; 4], Some(0)).unwrap(),
        vec![1.0, 0.0],
        0.9,
        None,
    )
    .unwrap();
    let runs = 6000;
    let mut all_used = 0;
    for seed in 0..runs {
        let mut st = stepper("random", &[], &env, seed);
        let out =
            run(&mut st, &data, &config(Method::Psrs(PsrsOrder::CheckFirst), EpisodeEnd::ReturnToStart), seed).unwrap();
        assert_eq!(out.returns.len(), 2);
        all_used += usize::from(out.tuples_used == 5);
    }
    let p = 2.0 / 3.0;
    within(all_used as f64 / runs as f64, p, (p * (1.0 - p) / runs as f64).sqrt(), "P(all data used)");
    // The paper's order: the first episode always ends (state 1's first two pops hold a return to
    // 0 and neither empties its stream); the second starts by popping state 0's last row, which
    // empties the stream and ends the run. Exactly one episode, never all data.
    for seed in 0..200 {
        let mut st = stepper("random", &[], &env, seed);
        let out =
            run(&mut st, &data, &config(Method::Psrs(PsrsOrder::Paper), EpisodeEnd::ReturnToStart), seed).unwrap();
        assert_eq!((out.returns.len(), out.stop), (1, StopReason::EmptyStream { state: 0 }));
        assert!(out.tuples_used < 5);
    }
}

/// A two-state, two-action environment with dyadic probabilities (exact in binary) and rewards
/// that depend on (s, a, s'), starting in either state with probability 1/2.
fn dyadic_env() -> FiniteEnv {
    #[rustfmt::skip]
    let p = vec![
        0.5, 0.5,   0.25, 0.75,
        0.75, 0.25, 0.0, 1.0,
    ];
    // The impossible transition (1, 1) -> 0 has reward 0, as in a model that never sees it.
    let r = vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 0.0, 7.0];
    FiniteEnv::new("dyadic", Mdp::new(2, 2, p, r, None).unwrap(), vec![0.5, 0.5], 0.9, None).unwrap()
}

/// A log of one-step episodes holding every transition of `dyadic_env` with its exact frequency
/// (4 rows per (state, action)), so that each state starts half of the episodes.
fn exact_log() -> Dataset {
    let env = dyadic_env();
    let (p, r) = (env.mdp().transitions(), env.mdp().rewards());
    let (mut s, mut a, mut y, mut rw) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..8 {
        for _ in 0..(p[i] * 4.0) as usize {
            s.push((i / 4) as i64);
            a.push((i / 2 % 2) as i64);
            y.push((i % 2) as i64);
            rw.push(r[i]);
        }
    }
    let e: Vec<i64> = (0..s.len() as i64).collect();
    let t = vec![0i64; s.len()];
    let columns = LogColumns { episode: &e, t: &t, state: &s, action: &a, reward: &rw, next_state: &y, terminal: None };
    Dataset::new(2, 2, None, columns, LoggingInput::Unknown).unwrap()
}

#[test]
fn the_model_of_an_exact_log_is_the_environment_and_its_evaluation_the_online_run() {
    let env = dyadic_env();
    let data = exact_log();
    let model = mle_model(&data, 0.9, 50).unwrap();
    assert_eq!(model.mdp().transitions(), env.mdp().transitions());
    assert_eq!(model.mdp().rewards(), env.mdp().rewards());
    assert_eq!(model.start_law(), env.start_law());
    // Same streams (the model's environment stream is the online truth's): identical returns.
    let cfg = Config { max_episodes: Some(30), ..config(Method::Model { max_steps: 40 }, EpisodeEnd::Horizon(5)) };
    let base = stepper("psrl", &[("k", ParamValue::Int(3))], &env, 0);
    let episodes = data.episodes(EpisodeEnd::Horizon(1)).unwrap();
    let model_runs = evaluate_runs(&base, &data, &episodes, &cfg, 7, 0, 4, Schedule::Sequential).unwrap();
    let online = online_runs(&base, &env, 30, cfg.end, 1.0, 40, 7, 0, 4, Schedule::Sequential).unwrap();
    for (m, o) in model_runs.iter().zip(&online) {
        assert_eq!(&m.returns, o);
        assert_eq!(m.lengths, vec![5; 30]);
        assert_eq!(m.stop, StopReason::MaxEpisodes);
    }
    assert!(online.windows(2).any(|w| w[0] != w[1]));
}

#[test]
fn the_model_sends_untried_pairs_nowhere_and_needs_a_number_of_episodes() {
    // Only (0, 0) -> 1 is logged: every other pair stays in its state with reward 0.
    let (e, t, s, a, y, r) = ([0i64], [0i64], [0i64], [0i64], [1i64], [2.5]);
    let columns = LogColumns { episode: &e, t: &t, state: &s, action: &a, reward: &r, next_state: &y, terminal: None };
    let data = Dataset::new(3, 2, Some(0), columns, LoggingInput::Unknown).unwrap();
    let model = mle_model(&data, 0.9, 10).unwrap();
    let p = model.mdp().transitions();
    assert_eq!(&p[0..3], &[0.0, 1.0, 0.0]);
    assert_eq!(model.mdp().rewards()[1], 2.5);
    for (state, action) in [(0, 1), (1, 0), (1, 1), (2, 0), (2, 1)] {
        let row = (state * 2 + action) * 3;
        assert_eq!(p[row + state], 1.0, "({state}, {action})");
    }
    let mut st3 = Stepper::new(build("random", &Params::new()).unwrap(), 3, 2, SETTING, stream(0, 0, 0));
    let err = run(&mut st3, &data, &config(Method::Model { max_steps: 10 }, EpisodeEnd::Horizon(3)), 0).unwrap_err();
    assert!(err.to_string().contains("give max_episodes"), "{err}");
}

#[test]
fn logs_replayed_from_their_own_start_states() {
    // RiverSwim (Strehl) starts in state 1 or 2 with probability 1/2: the log keeps both.
    let env = river_swim(RiverSwimVariant::Strehl, 0.95).unwrap();
    let end = EpisodeEnd::Horizon(10);
    let data = collect(&env, &uniform(6, 2), 400, end, 10, 3).unwrap();
    assert_eq!(data.start_state(), None);
    let starts = data.logged_starts();
    assert!(starts.iter().all(|&s| s == 1 || s == 2) && starts.contains(&1) && starts.contains(&2));
    // With the logging policy as candidate, every pop is accepted and a horizon episode never
    // gets stuck before its end: PSRS emits one episode per logged start, starts in the logged
    // proportions, and stops when the starts are used up (or a stream is empty).
    let mut ones = 0usize;
    let mut total = 0usize;
    for seed in 0..40 {
        let mut st = stepper("random", &[], &env, seed);
        let cfg = Config { trace: true, ..config(Method::Psrs(PsrsOrder::CheckFirst), end) };
        let out = run(&mut st, &data, &cfg, seed).unwrap();
        assert!(out.returns.len() <= 400);
        assert!(matches!(out.stop, StopReason::StartsExhausted | StopReason::EmptyStream { .. }));
        for (k, (episode, tr)) in out.trace.iter().enumerate() {
            if k == 0 || out.trace[k - 1].0 != *episode {
                ones += usize::from(tr.state == 1);
                total += 1;
            }
        }
        let q = run(&mut st, &data, &config(Method::Queue, end), seed).unwrap();
        assert!(q.returns.len() <= 400);
    }
    let logged = starts.iter().filter(|&&s| s == 1).count() as f64 / starts.len() as f64;
    // Each run draws starts from the same log without replacement: the share is the log's.
    within(ones as f64 / total as f64, logged, (logged * (1.0 - logged) / total as f64).sqrt(), "share of start 1");
    // PERS: the candidate is the logging policy, so M = 1 accepts every episode; a bound from the
    // agent's policy is refused (its draws cannot be kept across rejections).
    let mut st = stepper("random", &[], &env, 0);
    let out = run(&mut st, &data, &config(pers(MBound::Fixed(1.0), None, false), end), 0).unwrap();
    assert_eq!(out.accepted, 400);
    let err = run(&mut st, &data, &config(pers(MBound::Policy, None, false), end), 0).unwrap_err();
    assert!(err.to_string().contains("needs a fixed M"), "{err}");
    let out = run(&mut st, &data, &config(pers(MBound::Logging, None, false), end), 0).unwrap();
    assert_eq!(out.m_values[0], 1024.0);
}

#[test]
fn queue_is_biased_conditionally_on_reaching_an_episode() {
    // Mandel et al. section 7: states {0, 1, 2}, one-step episodes; action 0 leads to 1 (reward 0),
    // action 1 to 2 (reward 1). The log holds one action-0 episode and three action-1 episodes;
    // the candidate is uniform. Online, E[R(2)] = 1/2. The queue reaches episode 2 unless both
    // first picks are action 0 (the second finds its queue empty): P = 3/4, and then
    // E[R(2) | reached] = P(second pick is 1) / P(reached) = (1/2) / (3/4) = 2/3.
    let p = vec![0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0];
    let mut rewards = vec![0.0; 18];
    rewards[5] = 1.0;
    let mdp = Mdp::new(3, 2, p, rewards, Some(0)).unwrap();
    let env = FiniteEnv::new("fork", mdp, vec![1.0, 0.0, 0.0], 0.9, None).unwrap();
    let (e, t) = ([0i64, 1, 2, 3], [0i64; 4]);
    let (s, a, y) = ([0i64; 4], [0i64, 1, 1, 1], [1i64, 2, 2, 2]);
    let r = [0.0, 1.0, 1.0, 1.0];
    let columns = LogColumns { episode: &e, t: &t, state: &s, action: &a, reward: &r, next_state: &y, terminal: None };
    let data = Dataset::new(3, 2, Some(0), columns, LoggingInput::Unknown).unwrap();
    let runs = 20_000;
    let (mut reached, mut second) = (0usize, 0.0);
    for seed in 0..runs {
        let mut st = stepper("random", &[], &env, seed);
        let out = run(&mut st, &data, &config(Method::Queue, EpisodeEnd::Horizon(1)), seed).unwrap();
        if out.returns.len() >= 2 {
            reached += 1;
            second += out.returns[1];
        }
    }
    let q = 0.75;
    within(reached as f64 / runs as f64, q, (q * (1.0 - q) / runs as f64).sqrt(), "P(reach episode 2)");
    let mean = second / reached as f64;
    within(mean, 2.0 / 3.0, (2.0 / 9.0 / reached as f64).sqrt(), "E[R(2) | reached]");
    assert!(mean - 0.5 > 0.1, "the bias is visible: {mean}");
}

#[test]
fn pers_with_the_logging_policy_accepts_every_episode() {
    // Self-idempotence: pi_b = pi_e gives ratios of 1 and M = 1, so every episode is accepted.
    let env = six_arms(0.95).unwrap();
    let data = collect(&env, &uniform(7, 6), 200, EpisodeEnd::ReturnToStart, 10_000, 8).unwrap();
    for seed in 0..5 {
        let mut st = stepper("random", &[], &env, seed);
        let cfg = config(pers(MBound::Policy, Some(10_000), false), EpisodeEnd::ReturnToStart);
        let out = run(&mut st, &data, &cfg, seed).unwrap();
        assert_eq!((out.accepted, out.returns.len()), (200, 200), "seed {seed}");
        assert!(out.m_values.iter().all(|&m| m == 1.0));
        assert_eq!(out.stop, StopReason::DataExhausted);
    }
}

#[test]
fn fixed_m_acceptances_are_binomial() {
    // Fixed M: each proposal is accepted with probability exactly 1/M whatever the history, so a
    // run's count is Binomial(N, 1/M). RiverSwim (Osband), 3-step episodes, uniform logging over 2
    // actions: M = 2^3 = 8. A learner that changes its policy at every step (e-Greedy).
    // Each run draws a fresh log: the 1/M is an expectation over the data too.
    let env = river_swim(RiverSwimVariant::Osband, 1.0).unwrap();
    let (n, runs) = (40, 2000);
    let cfg = config(pers(MBound::Logging, None, false), EpisodeEnd::Horizon(3));
    let base = stepper("egreedy", &[("epsilon", ParamValue::Float(0.2))], &env, 0);
    let mut outs = Vec::new();
    for i in 0..runs {
        let data = collect(&env, &uniform(6, 2), n, EpisodeEnd::Horizon(3), 10, 9 + i as u64).unwrap();
        let mut st = wrap(base.agent().clone_box(), &env, 1000 + i as u64);
        outs.push(run(&mut st, &data, &cfg, i as u64).unwrap());
    }
    let counts: Vec<f64> = outs.iter().map(|o| o.accepted as f64).collect();
    assert!(outs.iter().all(|o| o.m_values.iter().all(|&m| m == 8.0)));
    let p = 1.0 / 8.0;
    let total: f64 = counts.iter().sum();
    let trials = (runs * n) as f64;
    within(total, trials * p, (trials * p * (1.0 - p)).sqrt(), "total acceptances");
    let mean = total / runs as f64;
    let var = counts.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / (runs - 1) as f64;
    // The sample variance of R draws has sd about var * sqrt(2 / (R - 1)) (near-normal counts).
    let expected = n as f64 * p * (1.0 - p);
    within(var, expected, expected * (2.0 / (runs - 1) as f64).sqrt() * 1.2, "variance of the counts");
    // The same learner under the policy bound is refused: its policy moves within an episode.
    let data = collect(&env, &uniform(6, 2), n, EpisodeEnd::Horizon(3), 10, 9).unwrap();
    let mut st = stepper("egreedy", &[("epsilon", ParamValue::Float(0.2))], &env, 0);
    let cfg = config(pers(MBound::Policy, None, false), EpisodeEnd::Horizon(3));
    let err = run(&mut st, &data, &cfg, 0).unwrap_err().to_string();
    assert!(err.contains("changed within the episode"), "{err}");
}

/// A learner with a closed-form learning curve: uniform over two actions until its first reward,
/// then the action that earned it forever.
#[derive(Clone, Debug, Default)]
struct CommitOnFirstReward {
    committed: Option<usize>,
}

impl Agent for CommitOnFirstReward {
    fn name(&self) -> String {
        "commit".into()
    }
    fn learn_offline(&mut self, _prior: &Fdm, _setting: Setting, _rng: &mut Rng) -> Result<()> {
        Ok(())
    }
    fn start_task(&mut self, _context: &TaskContext<'_>, _rng: &mut Rng) -> Result<()> {
        self.committed = None;
        Ok(())
    }
    fn act(&mut self, _state: usize, rng: &mut Rng) -> Result<usize> {
        Ok(self.committed.unwrap_or_else(|| rng.random_range(0..2)))
    }
    fn observe(&mut self, t: Transition, _rng: &mut Rng) -> Result<()> {
        if t.reward > 0.0 && self.committed.is_none() {
            self.committed = Some(t.action);
        }
        Ok(())
    }
    fn action_probabilities(&mut self, _state: usize, out: &mut [f64]) -> Result<()> {
        match self.committed {
            None => out.fill(0.5),
            Some(a) => {
                out.fill(0.0);
                out[a] = 1.0;
            }
        }
        Ok(())
    }
    fn clone_box(&self) -> Box<dyn Agent> {
        Box::new(self.clone())
    }
}

/// State 0, two actions: action a reaches state 1 with probability `p[a]` (reward 1), else stays
/// (reward 0); state 1 goes back to 0. One-step episodes from state 0.
fn coin_env(p: [f64; 2]) -> FiniteEnv {
    let transitions = vec![1.0 - p[0], p[0], 1.0 - p[1], p[1], 1.0, 0.0, 1.0, 0.0];
    let rewards = vec![0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0];
    FiniteEnv::new("coins", Mdp::new(2, 2, transitions, rewards, Some(0)).unwrap(), vec![1.0, 0.0], 0.9, None).unwrap()
}

#[test]
fn importance_weighted_pers_is_unbiased_for_a_known_learning_curve() {
    // Theorem 7.2. For CommitOnFirstReward with success probabilities p = (0.05, 0.9): before
    // committing the expected reward is pbar = 0.475; it commits to action a with probability
    // p_a / (p_0 + p_1), after which it earns (p_0^2 + p_1^2) / (p_0 + p_1) = 0.855. It is still
    // uncommitted at episode T with probability (1 - pbar)^(T - 1), so
    // E[R(T)] = u_T pbar + (1 - u_T) 0.855 with u_T = 0.525^(T - 1).
    // Fixed M = 1 / min pi_e = 2 (one step, uniform logging). Each run draws a fresh log of N = 30
    // episodes (the theorem's expectation is over the data too).
    let p = [0.05, 0.9];
    let env = coin_env(p);
    let (n, runs, t_max) = (30, 20_000, 20);
    let cfg = config(pers(MBound::Logging, None, true), EpisodeEnd::Horizon(1));
    let mut sums = vec![0.0; t_max];
    let mut squares = vec![0.0; t_max];
    for i in 0..runs {
        let data = collect(&env, &uniform(2, 2), n, EpisodeEnd::Horizon(1), 10, 100 + i).unwrap();
        let mut st = wrap(Box::new(CommitOnFirstReward::default()), &env, i);
        let out = run(&mut st, &data, &cfg, i).unwrap();
        let w = out.weighted.unwrap();
        assert_eq!(w.len(), n);
        for t in 0..t_max {
            sums[t] += w[t];
            squares[t] += w[t] * w[t];
        }
    }
    let pbar = (p[0] + p[1]) / 2.0;
    let committed = (p[0] * p[0] + p[1] * p[1]) / (p[0] + p[1]);
    for t in 0..t_max {
        let u = (1.0 - pbar).powi(t as i32);
        let truth = u * pbar + (1.0 - u) * committed;
        let mean = sums[t] / runs as f64;
        let sd = ((squares[t] / runs as f64 - mean * mean) / runs as f64).sqrt();
        within(mean, truth, sd, &format!("weighted estimate of R({})", t + 1));
    }
}

/// An agent whose whole episode depends on one private draw chi at the start of the episode:
/// chi = 0 (probability 1/2) plays uniformly, chi = 1 always plays action 0.
#[derive(Clone, Debug, Default)]
struct OneDrawPerEpisode {
    chi: bool,
}

impl Agent for OneDrawPerEpisode {
    fn name(&self) -> String {
        "chi".into()
    }
    fn learn_offline(&mut self, _prior: &Fdm, _setting: Setting, _rng: &mut Rng) -> Result<()> {
        Ok(())
    }
    fn start_task(&mut self, _context: &TaskContext<'_>, _rng: &mut Rng) -> Result<()> {
        Ok(())
    }
    fn start_episode(&mut self, _state: usize, rng: &mut Rng) -> Result<()> {
        self.chi = rng.random::<bool>();
        Ok(())
    }
    fn act(&mut self, _state: usize, rng: &mut Rng) -> Result<usize> {
        Ok(if self.chi { 0 } else { rng.random_range(0..2) })
    }
    fn observe(&mut self, _t: Transition, _rng: &mut Rng) -> Result<()> {
        Ok(())
    }
    fn action_probabilities(&mut self, _state: usize, out: &mut [f64]) -> Result<()> {
        if self.chi {
            out.copy_from_slice(&[1.0, 0.0]);
        } else {
            out.fill(0.5);
        }
        Ok(())
    }
    fn clone_box(&self) -> Box<dyn Agent> {
        Box::new(self.clone())
    }
}

#[test]
fn pers_keeps_the_agents_draw_across_rejections() {
    // Online, the agent plays action 0 with probability 1/2 * 1 + 1/2 * 1/2 = 3/4. With uniform
    // logging and one-step episodes, M from the policy is 1 for chi = 0 and 2 for chi = 1. Keeping
    // chi until acceptance gives the accepted episode the online law (3/4); drawing chi again after
    // a rejection would weight chi by 1/M(chi): (1/2 * 1/2 * 1 + 1/2 * 1/2) / (1/2 + 1/4) = 2/3.
    // Only each run's first accepted episode is counted: later ones are biased by the end of the
    // data (a chi = 1 draw needs more proposals, so it is more often left pending when the log runs
    // out: the conditional bias of a finite log). With 20 proposals the first acceptance fails
    // with probability at most 2^-20.
    let env = bandit(&[0.0, 1.0]);
    let cfg = Config { trace: true, ..config(pers(MBound::Policy, None, false), EpisodeEnd::Horizon(1)) };
    let runs = 20_000;
    let mut zeros = 0usize;
    for i in 0..runs {
        let data = collect(&env, &[0.5, 0.5], 20, EpisodeEnd::Horizon(1), 10, 500 + i).unwrap();
        let mut st = wrap(Box::new(OneDrawPerEpisode::default()), &env, i);
        let out = run(&mut st, &data, &cfg, i).unwrap();
        assert!(out.accepted >= 1);
        zeros += usize::from(out.trace[0].1.action == 0);
    }
    let f = zeros as f64 / runs as f64;
    within(f, 0.75, (0.75 * 0.25 / runs as f64).sqrt(), "share of action 0 in first accepted episodes");
}

#[test]
fn restore_then_replay_gives_identical_probabilities() {
    // PERS relies on it: after a rejection the agent is exactly where it stood.
    let env = six_arms(0.95).unwrap();
    let data = collect(&env, &uniform(7, 6), 20, EpisodeEnd::ReturnToStart, 10_000, 11).unwrap();
    let mut st = stepper("psrl", &[("k", ParamValue::Int(3))], &env, 4);
    st.start_task().unwrap();
    st.start_episode(0).unwrap();
    let snap = st.snapshot().unwrap();
    let feed = |st: &mut Stepper| {
        let mut seen = Vec::new();
        let mut pb = vec![0.0; 6];
        for step in data.steps() {
            st.action_probabilities(step.state, &mut pb).unwrap();
            seen.extend_from_slice(&pb);
            let t =
                Transition { state: step.state, action: step.action, reward: step.reward, next_state: step.next_state };
            st.observe(t).unwrap();
            seen.push(st.act(step.next_state).unwrap() as f64);
        }
        seen
    };
    let first = feed(&mut st);
    st.restore(&snap).unwrap();
    assert_eq!(first, feed(&mut st));
}

#[test]
fn support_violations_and_bad_options_are_clear_errors() {
    let env = bandit(&[0.0, 1.0]);
    let data = collect(&env, &[1.0, 0.0], 50, EpisodeEnd::Horizon(1), 10, 12).unwrap();
    let mut st = stepper("random", &[], &env, 0);
    let err = run(&mut st, &data, &config(Method::Psrs(PsrsOrder::CheckFirst), EpisodeEnd::Horizon(1)), 0)
        .unwrap_err()
        .to_string();
    assert!(err.contains("support violation"), "{err}");
    let cfg = config(pers(MBound::Policy, None, false), EpisodeEnd::Horizon(1));
    assert!(run(&mut st, &data, &cfg, 0).unwrap_err().to_string().contains("support violation"));
    let cfg = config(pers(MBound::Policy, None, true), EpisodeEnd::Horizon(1));
    assert!(run(&mut st, &data, &cfg, 0).unwrap_err().to_string().contains("needs a fixed M"));
    let data = collect(&env, &[0.5, 0.5], 50, EpisodeEnd::Horizon(1), 10, 12).unwrap();
    // A fixed M below the real ratio (2 for the deterministic agent's action) is caught.
    let cfg = config(pers(MBound::Fixed(1.5), None, false), EpisodeEnd::Horizon(1));
    let mut chi = wrap(Box::new(OneDrawPerEpisode::default()), &env, 3);
    let mut caught = false;
    for seed in 0..20 {
        if let Err(e) = run(&mut chi, &data, &cfg, seed) {
            assert!(e.to_string().contains("does not bound"), "{e}");
            caught = true;
            break;
        }
    }
    assert!(caught);
}

#[test]
fn runs_are_identical_whatever_the_thread_count() {
    let env = six_arms(0.95).unwrap();
    let data = collect(&env, &uniform(7, 6), 300, EpisodeEnd::ReturnToStart, 10_000, 13).unwrap();
    let cfg = config(Method::Psrs(PsrsOrder::CheckFirst), EpisodeEnd::ReturnToStart);
    let episodes = data.episodes(cfg.end).unwrap();
    let base = stepper("psrl", &[("k", ParamValue::Int(2))], &env, 0);
    let one = evaluate_runs(&base, &data, &episodes, &cfg, 5, 0, 6, Schedule::Parallel { threads: Some(1) }).unwrap();
    let two = evaluate_runs(&base, &data, &episodes, &cfg, 5, 0, 6, Schedule::Parallel { threads: Some(2) }).unwrap();
    let three = evaluate_runs(&base, &data, &episodes, &cfg, 5, 0, 6, Schedule::Sequential).unwrap();
    assert_eq!(one, two);
    assert_eq!(one, three);
    // A block of runs (a worker process's share) is the same runs.
    let tail = evaluate_runs(&base, &data, &episodes, &cfg, 5, 4, 2, Schedule::Sequential).unwrap();
    assert_eq!(tail[..], one[4..]);
    // The runs use different streams: they differ.
    assert!(one.windows(2).any(|w| w[0] != w[1]));
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// A random finite environment whose every transition may return to the start state 0 (so
    /// return-to-start episodes end), with the row weights given.
    fn random_env(n_states: usize, n_actions: usize, weights: &[f64]) -> FiniteEnv {
        let mut p = vec![0.0; n_states * n_actions * n_states];
        let mut r = vec![0.0; n_states * n_actions * n_states];
        for row in 0..n_states * n_actions {
            let w = &weights[row * n_states..(row + 1) * n_states];
            let total: f64 = w.iter().sum::<f64>() + 1.0;
            for y in 0..n_states {
                p[row * n_states + y] = (w[y] + f64::from(u8::from(y == 0))) / total;
                r[row * n_states + y] = (row + y) as f64;
            }
        }
        let mdp = Mdp::new(n_states, n_actions, p, r, Some(0)).unwrap();
        let mut start = vec![0.0; n_states];
        start[0] = 1.0;
        FiniteEnv::new("random", mdp, start, 0.9, None).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// With the candidate equal to the logging policy, whatever the environment and the seed:
        /// PSRS accepts every pop and emits every episode of the log; PERS accepts every episode;
        /// Queue feeds only logged transitions, each at most as often as it was logged.
        #[test]
        fn the_logging_policy_uses_the_whole_log(
            n_states in 1usize..5,
            n_actions in 1usize..4,
            weights in proptest::collection::vec(0.0f64..3.0, 64),
            n_episodes in 1usize..40,
            seed in 0u64..1000,
        ) {
            let env = random_env(n_states, n_actions, &weights);
            let end = EpisodeEnd::ReturnToStart;
            let data = collect(&env, &uniform(n_states, n_actions), n_episodes, end, 100_000, seed).unwrap();
            let mut st = stepper("random", &[], &env, seed);
            let out = run(&mut st, &data, &config(Method::Psrs(PsrsOrder::CheckFirst), end), seed).unwrap();
            prop_assert_eq!(out.returns.len(), n_episodes);
            prop_assert_eq!(out.accepted, out.proposals);
            let cfg = config(pers(MBound::Policy, Some(data.steps().len()), false), end);
            let out = run(&mut st, &data, &cfg, seed).unwrap();
            prop_assert_eq!(out.accepted, n_episodes);
            let cfg = Config { trace: true, ..config(Method::Queue, end) };
            let out = run(&mut st, &data, &cfg, seed).unwrap();
            prop_assert!(out.trace.len() <= out.tuples_used && out.tuples_used <= data.steps().len());
            let key = |s: usize, a: usize, y: usize| (s * n_actions + a) * n_states + y;
            let mut left = vec![0i64; n_states * n_actions * n_states];
            for step in data.steps() {
                left[key(step.state, step.action, step.next_state)] += 1;
            }
            for (_, t) in &out.trace {
                left[key(t.state, t.action, t.next_state)] -= 1;
            }
            prop_assert!(left.iter().all(|&n| n >= 0));
        }

        /// A log replayed from its own start states (every state a possible start): Queue and
        /// PSRS start each emitted episode in a logged start state, each at most as often as
        /// logged, and the model-based evaluator runs every requested episode.
        #[test]
        fn logged_starts_are_used_at_most_once_each(
            n_states in 2usize..5,
            n_actions in 1usize..4,
            weights in proptest::collection::vec(0.0f64..3.0, 64),
            n_episodes in 1usize..30,
            horizon in 1usize..6,
            seed in 0u64..1000,
        ) {
            let fixed = random_env(n_states, n_actions, &weights);
            let start = vec![1.0 / n_states as f64; n_states];
            let env = FiniteEnv::new("random", fixed.mdp().clone(), start, 0.9, None).unwrap();
            let end = EpisodeEnd::Horizon(horizon);
            let data = collect(&env, &uniform(n_states, n_actions), n_episodes, end, horizon, seed).unwrap();
            let mut logged = vec![0i64; n_states];
            for s in data.logged_starts() {
                logged[s] += 1;
            }
            for method in [Method::Queue, Method::Psrs(PsrsOrder::CheckFirst)] {
                let mut st = stepper("random", &[], &env, seed);
                let out = run(&mut st, &data, &Config { trace: true, ..config(method, end) }, seed).unwrap();
                prop_assert!(out.returns.len() <= n_episodes);
                let mut left = logged.clone();
                for (k, (episode, t)) in out.trace.iter().enumerate() {
                    if k == 0 || out.trace[k - 1].0 != *episode {
                        left[t.state] -= 1;
                    }
                }
                prop_assert!(left.iter().all(|&n| n >= 0));
            }
            let mut st = stepper("random", &[], &env, seed);
            let cfg = Config { max_episodes: Some(7), ..config(Method::Model { max_steps: 50 }, end) };
            prop_assert_eq!(run(&mut st, &data, &cfg, seed).unwrap().returns.len(), 7);
        }
    }
}
