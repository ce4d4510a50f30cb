//! Mountain Car (Sutton and Barto's dynamics, as in the policy-evaluation studies of Pan, White and
//! White 2017 and Sajed, Chung and White 2018). The state is `[position, velocity]`.
//!
//! Actions 0, 1, 2 push with force −1, 0, +1. One step: v′ = clip(v + 0.001(a − 1) − 0.0025 cos(3x),
//! −0.07, 0.07), x′ = x + v′; hitting the left wall (x′ < −1.2) sets x′ = −1.2 and v′ = 0. The
//! episode ends when x′ ≥ 0.5. Every step, the last one included, pays −1. Episodes start at
//! x ~ U[−0.6, −0.4), v = 0.

use rand::Rng as _;

use super::{Env, Step};
use crate::error::Result;
use crate::invalid;
use crate::rng::Rng;

/// The name the registry and results show.
pub const NAME: &str = "MountainCar";

pub const MC_MIN_POSITION: f64 = -1.2;
pub const MC_GOAL_POSITION: f64 = 0.5;
pub const MC_MAX_SPEED: f64 = 0.07;

/// Mountain Car with a discount (0.99 in Sajed et al., whose value bound 100 = 1/(1 − 0.99)).
#[derive(Clone, Debug)]
pub struct MountainCar {
    discount: f64,
    time_limit: Option<usize>,
}

impl MountainCar {
    /// The states a reference or an evaluation may start from: (low, high, name) of each
    /// coordinate, both ends included.
    pub const STATE_BOX: [(f64, f64, &'static str); 2] =
        [(MC_MIN_POSITION, MC_GOAL_POSITION, "position"), (-MC_MAX_SPEED, MC_MAX_SPEED, "velocity")];

    /// `discount` in (0, 1]; `time_limit` (steps) optional: without one, an undiscounted Mountain
    /// Car is the episodic task whose return runs to termination.
    pub fn new(discount: f64, time_limit: Option<usize>) -> Result<Self> {
        if !(discount > 0.0 && discount <= 1.0) {
            return Err(invalid!("discount must be in (0, 1], got {discount}"));
        }
        if time_limit == Some(0) {
            return Err(invalid!("time_limit must be >= 1 step"));
        }
        Ok(Self { discount, time_limit })
    }

    /// A state drawn uniformly over the non-terminal box [−1.2, 0.5) × [−0.07, 0.07] (how Sajed
    /// et al. choose their evaluation states).
    pub fn uniform_state(&self, rng: &mut Rng) -> [f64; 2] {
        let x = MC_MIN_POSITION + (MC_GOAL_POSITION - MC_MIN_POSITION) * rng.random::<f64>();
        let v = MC_MAX_SPEED * (2.0 * rng.random::<f64>() - 1.0);
        [x, v]
    }

    /// The deterministic transition.
    #[inline]
    pub fn next_state(state: &[f64; 2], action: usize) -> [f64; 2] {
        let [x, v] = *state;
        let mut v = (v + 0.001 * (action as f64 - 1.0) - 0.0025 * (3.0 * x).cos()).clamp(-MC_MAX_SPEED, MC_MAX_SPEED);
        let mut x = x + v;
        if x < MC_MIN_POSITION {
            x = MC_MIN_POSITION;
            v = 0.0;
        }
        [x, v]
    }
}

impl Env for MountainCar {
    type State = [f64; 2];

    fn name(&self) -> String {
        NAME.to_string()
    }
    fn n_actions(&self) -> usize {
        3
    }
    fn discount(&self) -> f64 {
        self.discount
    }
    fn reward_bounds(&self) -> (f64, f64) {
        (-1.0, -1.0)
    }
    fn time_limit(&self) -> Option<usize> {
        self.time_limit
    }
    fn reset(&self, rng: &mut Rng) -> [f64; 2] {
        [-0.6 + 0.2 * rng.random::<f64>(), 0.0]
    }
    #[inline]
    fn step(&self, state: &[f64; 2], action: usize, _rng: &mut Rng) -> Step<[f64; 2]> {
        let next_state = Self::next_state(state, action);
        Step { next_state, reward: -1.0, terminal: next_state[0] >= MC_GOAL_POSITION }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn hand_computed_steps() {
        // From (−0.5, 0) pushing right: v′ = 0.001 − 0.0025 cos(−1.5) = 0.001 − 0.0025 · 0.0707372 ...
        let [x, v] = MountainCar::next_state(&[-0.5, 0.0], 2);
        let expected_v = 0.001 - 0.0025 * (-1.5f64).cos();
        assert!((v - expected_v).abs() < 1e-15 && (x - (-0.5 + expected_v)).abs() < 1e-15);
        // The speed is clipped, and the left wall stops the car.
        // At x = −π/6 gravity vanishes (cos(−π/2) = 0): 0.0695 + 0.001 is clipped to 0.07.
        assert_eq!(MountainCar::next_state(&[-std::f64::consts::FRAC_PI_6, 0.0695], 2)[1], 0.07);
        assert_eq!(MountainCar::next_state(&[-1.19, -0.07], 0), [-1.2, 0.0]);
        let env = MountainCar::new(0.99, None).unwrap();
        let mut rng = stream(0, 0, 0);
        assert!(env.step(&[0.49, 0.02], 2, &mut rng).terminal);
        assert!(!env.step(&[0.0, 0.0], 1, &mut rng).terminal);
        for _ in 0..1000 {
            let [x, v] = env.uniform_state(&mut rng);
            assert!((-1.2..0.5).contains(&x) && (-0.07..=0.07).contains(&v));
            let [x0, v0] = env.reset(&mut rng);
            assert!((-0.6..-0.4).contains(&x0) && v0 == 0.0);
        }
        assert!(MountainCar::new(1.0, None).is_ok_and(|e| e.time_limit().is_none()));
        assert!(MountainCar::new(0.0, None).is_err());
    }
}
