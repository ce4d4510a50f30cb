//! Fixed policies over an environment's states: the policy whose values the references estimate.
//! Each policy gives its action probabilities and draws an action with one uniform number
//! (inverting the cumulative probabilities), so a rollout costs one draw per decision.

use rand::Rng as _;

use crate::error::Result;
use crate::invalid;
use crate::rng::Rng;

/// A fixed stochastic policy over states of type `S`.
pub trait Policy<S>: Send + Sync {
    /// Number of actions (must match the environment's).
    fn n_actions(&self) -> usize;
    /// π(· | state) into `out` (length `n_actions()`).
    fn probabilities(&self, state: &S, out: &mut [f64]);
    /// An action drawn from π(· | state).
    fn draw(&self, state: &S, rng: &mut Rng) -> usize;
    /// A short description with the parameters, stored beside references.
    fn describe(&self) -> String;
}

/// Every action with probability 1/A, whatever the state.
#[derive(Clone, Debug)]
pub struct UniformPolicy {
    n_actions: usize,
}

impl UniformPolicy {
    pub fn new(n_actions: usize) -> Result<Self> {
        if n_actions == 0 || n_actions > u32::MAX as usize {
            return Err(invalid!("a uniform policy needs 1 to 2^32 - 1 actions, got {n_actions}"));
        }
        Ok(Self { n_actions })
    }
}

impl<S> Policy<S> for UniformPolicy {
    fn n_actions(&self) -> usize {
        self.n_actions
    }
    fn probabilities(&self, _state: &S, out: &mut [f64]) {
        out.fill(1.0 / self.n_actions as f64);
    }
    #[inline]
    fn draw(&self, _state: &S, rng: &mut Rng) -> usize {
        crate::rng::random_below(self.n_actions as u32, rng) as usize
    }
    fn describe(&self) -> String {
        format!("uniform(n_actions={})", self.n_actions)
    }
}

/// The same action in every state: a deterministic policy, for instance one under which an
/// episode never ends (Mountain Car without pushing from the valley floor).
#[derive(Clone, Debug)]
pub struct ConstantPolicy {
    action: usize,
    n_actions: usize,
}

impl ConstantPolicy {
    pub fn new(action: usize, n_actions: usize) -> Result<Self> {
        if n_actions == 0 {
            return Err(invalid!("a constant policy needs n_actions >= 1"));
        }
        if action >= n_actions {
            return Err(invalid!("action {action} is out of range: allowed 0 to {}", n_actions - 1));
        }
        Ok(Self { action, n_actions })
    }
}

impl<S> Policy<S> for ConstantPolicy {
    fn n_actions(&self) -> usize {
        self.n_actions
    }
    fn probabilities(&self, _state: &S, out: &mut [f64]) {
        out.fill(0.0);
        out[self.action] = 1.0;
    }
    #[inline]
    fn draw(&self, _state: &S, _rng: &mut Rng) -> usize {
        self.action
    }
    fn describe(&self) -> String {
        format!("constant(action={}, n_actions={})", self.action, self.n_actions)
    }
}

/// Mountain Car's energy-pumping policy: push in the direction of the velocity (right, action 2,
/// when v ≥ 0; left, action 0, otherwise); with probability `random_share` the action is instead
/// uniform over the three. Sajed et al. use a share of 0.6, so π(pump | s) = 0.4 + 0.6/3 = 0.6 and
/// each other action has 0.2.
#[derive(Clone, Debug)]
pub struct EnergyPumping {
    random_share: f64,
}

impl EnergyPumping {
    pub fn new(random_share: f64) -> Result<Self> {
        if !(0.0..=1.0).contains(&random_share) {
            return Err(invalid!("random_share must be in [0, 1], got {random_share}"));
        }
        Ok(Self { random_share })
    }

    #[inline]
    fn pump(state: &[f64; 2]) -> usize {
        if state[1] >= 0.0 {
            2
        } else {
            0
        }
    }
}

impl Policy<[f64; 2]> for EnergyPumping {
    fn n_actions(&self) -> usize {
        3
    }
    fn probabilities(&self, state: &[f64; 2], out: &mut [f64]) {
        out.fill(self.random_share / 3.0);
        out[Self::pump(state)] += 1.0 - self.random_share;
    }
    #[inline]
    fn draw(&self, state: &[f64; 2], rng: &mut Rng) -> usize {
        // One uniform u: below the share it picks the random action (u / share is again uniform
        // on [0, 1)), otherwise the pump.
        let u: f64 = rng.random();
        if u < self.random_share {
            ((u / self.random_share * 3.0) as usize).min(2)
        } else {
            Self::pump(state)
        }
    }
    fn describe(&self) -> String {
        format!("energy_pumping(random_share={})", self.random_share)
    }
}

/// A stochastic policy over a finite MDP's states: one row of probabilities per state.
#[derive(Clone, Debug)]
pub struct TabularPolicy {
    n_actions: usize,
    probabilities: Vec<f64>,
    cumulative: Vec<f64>,
}

impl TabularPolicy {
    /// `probabilities` is S × A row-major; each row non-negative and summing to 1 within 1e-9.
    pub fn new(n_states: usize, n_actions: usize, probabilities: Vec<f64>) -> Result<Self> {
        if n_states == 0 || n_actions == 0 || probabilities.len() != n_states * n_actions {
            return Err(invalid!(
                "a tabular policy needs an (S, A) table with S, A >= 1; got {} entries for ({n_states}, {n_actions})",
                probabilities.len()
            ));
        }
        let mut cumulative = probabilities.clone();
        for (s, row) in cumulative.chunks_exact_mut(n_actions).enumerate() {
            if row.iter().any(|p| !(p.is_finite() && *p >= 0.0)) || (row.iter().sum::<f64>() - 1.0).abs() > 1e-9 {
                return Err(invalid!("policy row {s} must be non-negative and sum to 1, got {row:?}"));
            }
            let mut total = 0.0;
            for p in row.iter_mut() {
                total += *p;
                *p = total;
            }
        }
        Ok(Self { n_actions, probabilities, cumulative })
    }

    pub fn n_states(&self) -> usize {
        self.probabilities.len() / self.n_actions
    }
}

impl Policy<usize> for TabularPolicy {
    fn n_actions(&self) -> usize {
        self.n_actions
    }
    fn probabilities(&self, state: &usize, out: &mut [f64]) {
        out.copy_from_slice(&self.probabilities[state * self.n_actions..(state + 1) * self.n_actions]);
    }
    #[inline]
    fn draw(&self, state: &usize, rng: &mut Rng) -> usize {
        let row = &self.cumulative[state * self.n_actions..(state + 1) * self.n_actions];
        let u: f64 = rng.random();
        // The first action whose cumulative probability exceeds u; rounding falls back to the
        // last action with positive probability.
        let probs = &self.probabilities[state * self.n_actions..(state + 1) * self.n_actions];
        let mut last = 0;
        for (a, (&c, &p)) in row.iter().zip(probs).enumerate() {
            if p > 0.0 {
                if u < c {
                    return a;
                }
                last = a;
            }
        }
        last
    }
    fn describe(&self) -> String {
        format!("tabular(n_states={}, n_actions={})", self.n_states(), self.n_actions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn draws_follow_the_probabilities() {
        // 60 000 draws: each frequency within 5 standard deviations (sd ≤ sqrt(0.25/60000) = 0.002).
        let n = 60_000;
        let tol = 5.0 * (0.25f64 / n as f64).sqrt();
        let check = |policy: &dyn Fn(&mut Rng) -> usize, probs: &[f64]| {
            let mut rng = stream(3, 0, 0);
            let mut counts = vec![0usize; probs.len()];
            for _ in 0..n {
                counts[policy(&mut rng)] += 1;
            }
            for (c, p) in counts.iter().zip(probs) {
                assert!((*c as f64 / n as f64 - p).abs() < tol, "{counts:?} vs {probs:?}");
            }
        };
        let pump = EnergyPumping::new(0.6).unwrap();
        let mut probs = [0.0; 3];
        pump.probabilities(&[0.0, -0.01], &mut probs);
        assert!((probs[0] - 0.6).abs() < 1e-15 && (probs[1] - 0.2).abs() < 1e-15);
        check(&|rng| pump.draw(&[0.0, -0.01], rng), &probs);
        let tab = TabularPolicy::new(2, 3, vec![0.5, 0.0, 0.5, 0.1, 0.2, 0.7]).unwrap();
        check(&|rng| tab.draw(&1, rng), &[0.1, 0.2, 0.7]);
        check(&|rng| tab.draw(&0, rng), &[0.5, 0.0, 0.5]);
        let uni = UniformPolicy::new(4).unwrap();
        check(&|rng| Policy::<usize>::draw(&uni, &0, rng), &[0.25; 4]);
        assert!(TabularPolicy::new(1, 2, vec![0.5, 0.6]).is_err());
        assert!(EnergyPumping::new(1.5).is_err());
        let still = ConstantPolicy::new(1, 3).unwrap();
        check(&|rng| Policy::<usize>::draw(&still, &0, rng), &[0.0, 1.0, 0.0]);
        assert!(ConstantPolicy::new(3, 3).unwrap_err().to_string().contains("allowed 0 to 2"));
    }
}
