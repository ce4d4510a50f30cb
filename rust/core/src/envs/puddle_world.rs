//! Puddle World (the University of Alberta variant used by Pan, White and White 2017 and Sajed,
//! Chung and White 2018). The state is `[x, y]` in [0, 1]².
//!
//! Actions 0..4 are up, down, right, left: the agent moves 0.05 + n along that axis, with one
//! n ~ N(0, σ = 0.01) drawn per step, and the coordinates are clipped to [0, 1]. The episode ends
//! when x ≥ 0.95 and y ≥ 0.95, with reward −1. Any other step pays −1 − 400 Σ_i max(0, 0.1 − d_i),
//! with d_i the distance of the new position to puddle i, a segment of radius 0.1: puddle 1 from
//! (0.10, 0.75) to (0.45, 0.75), puddle 2 from (0.45, 0.40) to (0.45, 0.80). The two penalties add
//! up, so the worst reward is −81 at (0.45, 0.75). Episodes start at N(0.05, 0.1) per coordinate,
//! clipped to [0, 1].

use rand::Rng as _;
use rand_distr::StandardNormal;

use super::{Env, Step};
use crate::error::Result;
use crate::invalid;
use crate::rng::Rng;

/// The name the registry and results show.
pub const NAME: &str = "PuddleWorld";

const STEP: f64 = 0.05;
const GOAL: f64 = 0.95;
const RADIUS: f64 = 0.1;
const PENALTY: f64 = 400.0;
/// The standard deviation of the step length (σ above).
pub const DEFAULT_NOISE: f64 = 0.01;

/// The puddles' segments, (start, end).
const PUDDLES: [([f64; 2], [f64; 2]); 2] = [([0.10, 0.75], [0.45, 0.75]), ([0.45, 0.40], [0.45, 0.80])];

/// Puddle World with a discount (0.99 in Sajed et al.: value bound ≈ 81/(1 − 0.99)).
#[derive(Clone, Debug)]
pub struct PuddleWorld {
    discount: f64,
    noise: f64,
    time_limit: Option<usize>,
}

/// Distance from `p` to the segment `a`–`b`.
fn segment_distance(p: [f64; 2], a: [f64; 2], b: [f64; 2]) -> f64 {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let u = (((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / (dx * dx + dy * dy)).clamp(0.0, 1.0);
    let (cx, cy) = (a[0] + u * dx, a[1] + u * dy);
    ((p[0] - cx).powi(2) + (p[1] - cy).powi(2)).sqrt()
}

/// Whether `p` lies clearly outside the puddle of segment `a`–`b`: farther than the radius (plus a
/// margin far above rounding) from the segment's bounding box along x or y, so that the distance
/// computed by [`segment_distance`] exceeds the radius and the penalty is exactly 0. Most of the
/// square is, and this test costs a few comparisons instead of a division and a square root.
#[inline]
fn far_from(p: [f64; 2], a: [f64; 2], b: [f64; 2]) -> bool {
    const CLEAR: f64 = RADIUS + 1e-9;
    let gap_x = (a[0].min(b[0]) - p[0]).max(p[0] - a[0].max(b[0]));
    let gap_y = (a[1].min(b[1]) - p[1]).max(p[1] - a[1].max(b[1]));
    gap_x > CLEAR || gap_y > CLEAR
}

impl PuddleWorld {
    /// The states a reference or an evaluation may start from: (low, high, name) of each
    /// coordinate, both ends included.
    pub const STATE_BOX: [(f64, f64, &'static str); 2] = [(0.0, 1.0, "x"), (0.0, 1.0, "y")];

    /// `discount` in (0, 1] (without a time limit, an undiscounted Puddle World is the episodic
    /// task whose return runs to termination); `noise` ≥ 0 is the standard deviation of the step
    /// length (0.01 in the literature).
    pub fn new(discount: f64, noise: f64, time_limit: Option<usize>) -> Result<Self> {
        if !(discount > 0.0 && discount <= 1.0) {
            return Err(invalid!("discount must be in (0, 1], got {discount}"));
        }
        if !(noise.is_finite() && noise >= 0.0) {
            return Err(invalid!("noise must be finite and >= 0, got {noise}"));
        }
        if time_limit == Some(0) {
            return Err(invalid!("time_limit must be >= 1 step"));
        }
        Ok(Self { discount, noise, time_limit })
    }

    /// The reward of arriving at non-goal position `p`: −1 minus both puddle penalties.
    #[inline]
    pub fn reward_at(p: [f64; 2]) -> f64 {
        let penalty: f64 = PUDDLES
            .iter()
            .map(|&(a, b)| if far_from(p, a, b) { 0.0 } else { (RADIUS - segment_distance(p, a, b)).max(0.0) })
            .sum();
        -1.0 - PENALTY * penalty
    }

    pub fn is_goal(p: &[f64; 2]) -> bool {
        p[0] >= GOAL && p[1] >= GOAL
    }

    /// A state drawn uniformly over [0, 1]² outside the goal corner (Sajed et al.'s evaluation
    /// states), by rejection.
    pub fn uniform_state(&self, rng: &mut Rng) -> [f64; 2] {
        loop {
            let p = [rng.random::<f64>(), rng.random::<f64>()];
            if !Self::is_goal(&p) {
                return p;
            }
        }
    }
}

impl Env for PuddleWorld {
    type State = [f64; 2];

    fn name(&self) -> String {
        NAME.to_string()
    }
    fn n_actions(&self) -> usize {
        4
    }
    fn discount(&self) -> f64 {
        self.discount
    }
    fn reward_bounds(&self) -> (f64, f64) {
        (-1.0 - 2.0 * PENALTY * RADIUS, -1.0)
    }
    fn time_limit(&self) -> Option<usize> {
        self.time_limit
    }
    fn reset(&self, rng: &mut Rng) -> [f64; 2] {
        let mut draw = || (0.05 + 0.1 * rng.sample::<f64, _>(StandardNormal)).clamp(0.0, 1.0);
        [draw(), draw()]
    }
    #[inline(always)]
    fn step(&self, state: &[f64; 2], action: usize, rng: &mut Rng) -> Step<[f64; 2]> {
        let length = STEP + self.noise * rng.sample::<f64, _>(StandardNormal);
        let mut p = *state;
        match action {
            0 => p[1] += length,
            1 => p[1] -= length,
            2 => p[0] += length,
            _ => p[0] -= length,
        }
        p = [p[0].clamp(0.0, 1.0), p[1].clamp(0.0, 1.0)];
        let terminal = Self::is_goal(&p);
        let reward = if terminal { -1.0 } else { Self::reward_at(p) };
        Step { next_state: p, reward, terminal }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::stream;

    #[test]
    fn rewards_by_hand() {
        // Far from both puddles: −1. On both segments at (0.45, 0.75): −1 − 400(0.1 + 0.1) = −81.
        assert_eq!(PuddleWorld::reward_at([0.9, 0.1]), -1.0);
        assert!((PuddleWorld::reward_at([0.45, 0.75]) + 81.0).abs() < 1e-12);
        // 0.05 above puddle 1's middle (0.3, 0.8): −1 − 400 · 0.05 = −21.
        assert!((PuddleWorld::reward_at([0.3, 0.8]) + 21.0).abs() < 1e-12);
        // Beyond puddle 1's left end: distance to (0.1, 0.75) is 0.05 -> −21.
        assert!((PuddleWorld::reward_at([0.05, 0.75]) + 21.0).abs() < 1e-12);
        let env = PuddleWorld::new(0.99, 0.0, None).unwrap();
        let mut rng = stream(0, 0, 0);
        let s = env.step(&[0.5, 0.5], 0, &mut rng);
        assert!((s.next_state[1] - 0.55).abs() < 1e-15 && s.next_state[0] == 0.5);
        let s = env.step(&[0.02, 0.5], 3, &mut rng);
        assert_eq!(s.next_state, [0.0, 0.5]);
        let s = env.step(&[0.95, 0.92], 0, &mut rng);
        assert!(s.terminal && s.reward == -1.0);
        assert_eq!(env.reward_bounds(), (-81.0, -1.0));
        for _ in 0..1000 {
            assert!(!PuddleWorld::is_goal(&env.uniform_state(&mut rng)));
            let p = env.reset(&mut rng);
            assert!((0.0..=1.0).contains(&p[0]) && (0.0..=1.0).contains(&p[1]));
        }
        assert!(PuddleWorld::new(0.99, -1.0, None).is_err());
    }

    #[test]
    fn the_shortcut_far_from_the_puddles_changes_no_reward() {
        // Every reward, bit for bit, is the general formula's, including points just around the
        // edge of each puddle's reach and on a fine grid over the square.
        let general = |p: [f64; 2]| {
            let penalty: f64 = PUDDLES.iter().map(|&(a, b)| (RADIUS - segment_distance(p, a, b)).max(0.0)).sum();
            -1.0 - PENALTY * penalty
        };
        let mut rng = stream(1, 0, 0);
        let edges = [0.0, 0.35, 0.55, 0.65, 0.85, 0.3, 0.9, 0.45];
        let near = |e: f64, k: i32| e + k as f64 * 1e-10;
        for i in 0..=400 {
            for j in 0..=400 {
                let p = [i as f64 / 400.0, j as f64 / 400.0];
                assert_eq!(PuddleWorld::reward_at(p).to_bits(), general(p).to_bits(), "{p:?}");
            }
        }
        for &e in &edges {
            for k in -50..=50 {
                let u: f64 = rng.random();
                for p in [[near(e, k), u], [u, near(e, k)]] {
                    assert_eq!(PuddleWorld::reward_at(p).to_bits(), general(p).to_bits(), "{p:?}");
                }
            }
        }
    }
}
