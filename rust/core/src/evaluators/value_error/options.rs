//! The keyword options ([`crate::options::Options`]) of EBGStop ([`EbgStopConfig`]), of
//! Algorithm 1's references ([`ReferenceSettings`]), of Algorithm 2 at given states
//! ([`StateValuesOptions`]) and of linear TD(λ) ([`TdSettings`]). Every check lives with the
//! struct (its `validate`); these impls only read keys.

use super::ebgstop::{CheckVariant, EbgStopConfig};
use super::learners::TdSettings;
use super::references::ReferenceSettings;
use super::sample_size::AccuracySplit;
use super::stopping::{Bets, StopConfig, StoppingRule};
use crate::error::Result;
use crate::invalid;
use crate::options::{unknown_key, Options, ParamValue};

/// The keys every EBGStop run shares.
const EBGSTOP_KEYS: &[&str] = &["epsilon", "delta", "tau", "value_range", "variant", "beta", "p", "max_samples"];

impl Default for EbgStopConfig {
    /// The papers' defaults ([`EbgStopConfig::new`]); ε, δ, τ and the range have none (NaN).
    fn default() -> Self {
        Self::new(f64::NAN, f64::NAN, f64::NAN, f64::NAN)
    }
}

impl Options for EbgStopConfig {
    const KEYS: &'static [&'static str] = EBGSTOP_KEYS;
    const REQUIRED: &'static [&'static str] = &["epsilon", "delta", "tau", "value_range"];

    fn set(&mut self, key: &str, value: &ParamValue) -> Result<()> {
        match key {
            "epsilon" => self.epsilon = value.as_f64(key)?,
            "delta" => self.delta = value.as_f64(key)?,
            "tau" => self.tau = value.as_f64(key)?,
            "value_range" => self.range = value.as_f64(key)?,
            "variant" => self.variant = value.parse(key)?,
            "beta" => self.beta = value.as_f64(key)?,
            "p" => self.p = value.as_f64(key)?,
            "max_samples" => self.max_samples = value.as_u64(key)?,
            _ => return Err(unknown_key(key, Self::KEYS)),
        }
        Ok(())
    }

    fn validate(&self) -> Result<()> {
        EbgStopConfig::validate(self)
    }
}

impl Default for ReferenceSettings {
    /// The papers' defaults; ε, δ, τ and c have none (NaN).
    fn default() -> Self {
        let ebgstop = EbgStopConfig::default();
        Self {
            epsilon: f64::NAN,
            delta: f64::NAN,
            tau: f64::NAN,
            c: f64::NAN,
            k: 1,
            split: AccuracySplit::Corrected,
            rule: StoppingRule::Betting,
            bets: Bets::Aimed,
            variant: CheckVariant::Checkpoints,
            beta: ebgstop.beta,
            p: ebgstop.p,
            max_samples: ebgstop.max_samples,
            value_range: None,
            max_rollout_steps: None,
            accept_truncated: false,
            seed: 0,
            threads: None,
        }
    }
}

impl Options for ReferenceSettings {
    const KEYS: &'static [&'static str] = &[
        "epsilon",
        "delta",
        "tau",
        "c",
        "k",
        "split",
        "rule",
        "bets",
        "variant",
        "beta",
        "p",
        "max_samples",
        "value_range",
        "max_rollout_steps",
        "accept_truncated",
        "seed",
        "threads",
    ];
    const REQUIRED: &'static [&'static str] = &["epsilon", "delta", "tau", "c"];

    fn set(&mut self, key: &str, value: &ParamValue) -> Result<()> {
        match key {
            "epsilon" => self.epsilon = value.as_f64(key)?,
            "delta" => self.delta = value.as_f64(key)?,
            "tau" => self.tau = value.as_f64(key)?,
            "c" => self.c = value.as_f64(key)?,
            "k" => self.k = value.as_u64(key)?,
            "split" => self.split = value.parse(key)?,
            "rule" => self.rule = value.parse(key)?,
            "bets" => self.bets = value.parse(key)?,
            "variant" => self.variant = value.parse(key)?,
            "beta" => self.beta = value.as_f64(key)?,
            "p" => self.p = value.as_f64(key)?,
            "max_samples" => self.max_samples = value.as_u64(key)?,
            "value_range" => self.value_range = Some(value.as_f64(key)?),
            "max_rollout_steps" => self.max_rollout_steps = Some(value.as_usize(key)?),
            "accept_truncated" => self.accept_truncated = value.as_bool(key)?,
            "seed" => self.seed = value.as_u64(key)?,
            "threads" => self.threads = Some(value.as_u64(key)? as usize),
            _ => return Err(unknown_key(key, Self::KEYS)),
        }
        Ok(())
    }

    fn validate(&self) -> Result<()> {
        ReferenceSettings::validate(self)
    }
}

/// The keys of one certified mean under either stopping rule, followed by `$extra`: the one list
/// that [`STOP_KEYS`] and the options built on a [`StopConfig`] are written from.
macro_rules! stop_keys {
    ($($extra:literal),*) => {
        &["rule", "epsilon", "delta", "tau", "value_low", "value_range", "variant", "beta", "p", "max_bet", "bets",
          "max_samples" $(, $extra)*]
    };
}

/// The keys of one certified mean under either stopping rule.
const STOP_KEYS: &[&str] = stop_keys!();

impl Default for StopConfig {
    /// The betting rule; ε, δ, τ and the bounds have no default (NaN).
    fn default() -> Self {
        Self::new(f64::NAN, f64::NAN, f64::NAN, f64::NAN, f64::NAN)
    }
}

impl Options for StopConfig {
    const KEYS: &'static [&'static str] = STOP_KEYS;
    const REQUIRED: &'static [&'static str] = &["epsilon", "delta", "tau", "value_low", "value_range"];

    fn set(&mut self, key: &str, value: &ParamValue) -> Result<()> {
        match key {
            "rule" => self.rule = value.parse(key)?,
            "epsilon" => self.epsilon = value.as_f64(key)?,
            "delta" => self.delta = value.as_f64(key)?,
            "tau" => self.tau = value.as_f64(key)?,
            "value_low" => self.low = value.as_f64(key)?,
            "value_range" => self.range = value.as_f64(key)?,
            "variant" => self.variant = value.parse(key)?,
            "beta" => self.beta = value.as_f64(key)?,
            "p" => self.p = value.as_f64(key)?,
            "max_bet" => self.betting.max_bet = value.as_f64(key)?,
            "bets" => self.bets = value.parse(key)?,
            "max_samples" => self.max_samples = value.as_u64(key)?,
            _ => return Err(unknown_key(key, Self::KEYS)),
        }
        Ok(())
    }

    fn validate(&self) -> Result<()> {
        StopConfig::validate(self)
    }
}

/// Algorithm 2 at given states with explicit parameters: the stopping rule's, the rollout length
/// and the seed (state `i` draws from stream `(seed, VALUE_ERROR_ROLLOUTS, i)`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StateValuesOptions {
    pub stop: StopConfig,
    pub rollout_length: usize,
    pub seed: u64,
    /// Threads over states (None: every core); the values never depend on it.
    pub threads: Option<usize>,
}

impl Options for StateValuesOptions {
    const KEYS: &'static [&'static str] = stop_keys!("rollout_length", "seed", "threads");
    const REQUIRED: &'static [&'static str] =
        &["epsilon", "delta", "tau", "value_low", "value_range", "rollout_length"];

    fn set(&mut self, key: &str, value: &ParamValue) -> Result<()> {
        match key {
            "rollout_length" => self.rollout_length = value.as_usize(key)?,
            "seed" => self.seed = value.as_u64(key)?,
            "threads" => self.threads = Some(value.as_usize(key)?),
            _ if STOP_KEYS.contains(&key) => self.stop.set(key, value)?,
            _ => return Err(unknown_key(key, Self::KEYS)),
        }
        Ok(())
    }

    fn validate(&self) -> Result<()> {
        if self.rollout_length == 0 {
            return Err(invalid!("the rollout length must be >= 1"));
        }
        self.stop.validate()
    }
}

impl Default for TdSettings {
    /// Seed and run 0; α, λ and the step counts have no default (NaN, 0).
    fn default() -> Self {
        Self { alpha: f64::NAN, lambda: f64::NAN, n_steps: 0, eval_every: 0, seed: 0, run: 0 }
    }
}

impl Options for TdSettings {
    const KEYS: &'static [&'static str] = &["alpha", "lambda", "n_steps", "eval_every", "seed", "run"];
    const REQUIRED: &'static [&'static str] = &["alpha", "lambda", "n_steps", "eval_every"];

    fn set(&mut self, key: &str, value: &ParamValue) -> Result<()> {
        match key {
            "alpha" => self.alpha = value.as_f64(key)?,
            "lambda" => self.lambda = value.as_f64(key)?,
            "n_steps" => self.n_steps = value.as_u64(key)?,
            "eval_every" => self.eval_every = value.as_u64(key)?,
            "seed" => self.seed = value.as_u64(key)?,
            "run" => self.run = value.as_u64(key)?,
            _ => return Err(unknown_key(key, Self::KEYS)),
        }
        Ok(())
    }

    fn validate(&self) -> Result<()> {
        TdSettings::validate(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read<T: Options>(pairs: &[(&str, ParamValue)]) -> Result<T> {
        T::from_pairs(pairs.iter().map(|(k, v)| (*k, v)))
    }

    fn f(x: f64) -> ParamValue {
        ParamValue::Float(x)
    }

    #[test]
    fn ebgstop_options_default_to_the_papers_and_check_their_ranges() {
        let base = [("epsilon", f(0.1)), ("delta", f(0.05)), ("tau", f(1.0)), ("value_range", f(2.0))];
        let cfg: EbgStopConfig = read(&base).unwrap();
        assert_eq!(cfg, EbgStopConfig::new(0.1, 0.05, 1.0, 2.0));
        let mut every = base.to_vec();
        every.push(("variant", ParamValue::Text("every".into())));
        assert_eq!(read::<EbgStopConfig>(&every).unwrap().variant, CheckVariant::Every);
        let e = read::<EbgStopConfig>(&base[..3]).unwrap_err().to_string();
        assert!(e.contains("missing option 'value_range'"), "{e}");
        let mut bad = base.to_vec();
        bad.push(("variant", ParamValue::Text("always".into())));
        let e = read::<EbgStopConfig>(&bad).unwrap_err().to_string();
        assert!(e.contains("'checkpoints' or 'every'") && e.contains("always"), "{e}");
        bad[4] = ("beta", f(1.0));
        let e = read::<EbgStopConfig>(&bad).unwrap_err().to_string();
        assert!(e.contains("beta must be finite and > 1"), "{e}");
    }

    #[test]
    fn reference_settings_parse_the_split_and_check_delta_and_k() {
        let base = vec![("epsilon", f(0.2)), ("delta", f(0.2)), ("tau", f(1.0)), ("c", f(1.0))];
        let s: ReferenceSettings = read(&base).unwrap();
        assert_eq!((s.k, s.split, s.seed), (1, AccuracySplit::Corrected, 0));
        let mut paper = base.clone();
        paper.push(("split", ParamValue::Text("paper".into())));
        assert_eq!(read::<ReferenceSettings>(&paper).unwrap().split, AccuracySplit::Paper);
        paper[4] = ("split", ParamValue::Text("half".into()));
        let e = read::<ReferenceSettings>(&paper).unwrap_err().to_string();
        assert!(e.contains("'corrected' or 'paper'"), "{e}");
        let mut k0 = base.clone();
        k0.push(("k", ParamValue::Int(0)));
        assert!(read::<ReferenceSettings>(&k0).unwrap_err().to_string().contains("k (the number"));
        let mut d = base;
        d[1] = ("delta", f(1.0));
        assert!(read::<ReferenceSettings>(&d).unwrap_err().to_string().contains("delta must be in (0, 1)"));
    }

    #[test]
    fn state_values_and_td_options_need_their_lengths() {
        let mut pairs = vec![
            ("epsilon", f(0.1)),
            ("delta", f(0.1)),
            ("tau", f(1.0)),
            ("value_low", f(-1.0)),
            ("value_range", f(1.0)),
        ];
        let e = read::<StateValuesOptions>(&pairs).unwrap_err().to_string();
        assert!(e.contains("missing option 'rollout_length'"), "{e}");
        pairs.push(("rollout_length", ParamValue::Int(0)));
        assert!(read::<StateValuesOptions>(&pairs).unwrap_err().to_string().contains("rollout length must be >= 1"));
        pairs[5] = ("rollout_length", ParamValue::Int(30));
        assert_eq!(read::<StateValuesOptions>(&pairs).unwrap().stop.rule, StoppingRule::Betting);
        pairs.push(("rule", ParamValue::Text("ebgstop".into())));
        assert_eq!(read::<StateValuesOptions>(&pairs).unwrap().stop.rule, StoppingRule::Ebgstop);
        assert_eq!(read::<StateValuesOptions>(&pairs).unwrap().rollout_length, 30);

        let td = [
            ("alpha", f(0.1)),
            ("lambda", f(0.9)),
            ("n_steps", ParamValue::Int(10)),
            ("eval_every", ParamValue::Int(5)),
        ];
        assert_eq!(read::<TdSettings>(&td).unwrap().run, 0);
        let mut bad = td.to_vec();
        bad[1] = ("lambda", f(1.5));
        assert!(read::<TdSettings>(&bad).unwrap_err().to_string().contains("lambda must be in [0, 1]"));
        let e = read::<TdSettings>(&[("lambda_", f(0.5))]).unwrap_err().to_string();
        assert!(e.contains("unknown option 'lambda_'"), "{e}");
    }
}
