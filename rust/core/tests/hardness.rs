//! The hardness measures of the reference problems against independently computed values.

use bbrl_core::envs::{river_swim, six_arms, FiniteEnv, RiverSwimVariant};
use bbrl_core::model::hardness::{measure, Hardness};

fn of(env: &FiniteEnv) -> Hardness {
    let (p, r) = env.continuing_tables();
    let m = env.mdp();
    measure(m.n_states(), m.n_actions(), &p, &r, env.start_law()).unwrap()
}

#[test]
fn diameters_and_measures_of_the_reference_problems() {
    // Reference values computed independently (float64 policy iteration and hitting-time solves).
    let osband = of(&river_swim(RiverSwimVariant::Osband, 1.0).unwrap());
    assert!((osband.diameter - 14.7223).abs() < 1e-4, "{osband:?}");
    assert!((osband.gap_sum_colosseum - 65.198).abs() < 1e-3, "{osband:?}");
    assert!((osband.value_norm - 0.7847).abs() < 1e-4, "{osband:?}");
    assert!((osband.value_norm_colosseum - 1.3718).abs() < 1e-4, "{osband:?}");
    let strehl = of(&river_swim(RiverSwimVariant::Strehl, 0.95).unwrap());
    assert!((strehl.diameter - 22.5103).abs() < 1e-4, "{strehl:?}");
    assert!((strehl.gap_sum_colosseum - 60.003).abs() < 1e-3, "{strehl:?}");
    assert!((strehl.value_norm - 1951.85).abs() < 1e-2, "{strehl:?}");
    assert!((strehl.value_norm_colosseum - 3136.30).abs() < 1e-2, "{strehl:?}");
    assert!((of(&six_arms(0.95).unwrap()).diameter - 101.0).abs() < 1e-9);
}
