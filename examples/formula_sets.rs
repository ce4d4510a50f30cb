//! Generates the formula sets F_n (every valid formula of at most n tokens, reduced by their
//! ranking of random points) and writes them as `F<n>.txt`.
//!
//! ```text
//! cargo run --release --example formula_sets -- [--seed S] [--points N] [--out DIR] SIZES...
//! cargo run --release --example formula_sets -- --seed 0 --out python/bbrl/data/formulas 2 3 4 5 6
//! ```
//! Prints the size, counters and wall time of each set on stderr.

use std::path::PathBuf;

use bbrl_core::formula::set::format_formula_set;
use bbrl_core::formula::{formula_set_with_stats, set::POINTS_RANGE};

fn main() {
    let mut seed = 0u64;
    let mut points = 1000usize;
    let mut out = PathBuf::from("python/bbrl/data/formulas");
    let mut sizes = Vec::new();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    let value = |i: usize| args.get(i + 1).unwrap_or_else(|| panic!("{} needs a value", args[i])).clone();
    while i < args.len() {
        match args[i].as_str() {
            "--seed" => seed = value(i).parse().expect("--seed: an integer"),
            "--points" => points = value(i).parse().expect("--points: an integer"),
            "--out" => out = PathBuf::from(value(i)),
            s => {
                sizes.push(s.parse::<usize>().expect("sizes are integers"));
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    if sizes.is_empty() {
        eprintln!("usage: formula_sets [--seed S] [--points N] [--out DIR] SIZES...");
        std::process::exit(2);
    }
    std::fs::create_dir_all(&out).expect("create the output folder");
    let command = format!(
        "cargo run --release --example formula_sets -- --seed {seed} --points {points} --out {} {}",
        out.display(),
        sizes.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(" ")
    );
    for n in sizes {
        let (set, stats) = formula_set_with_stats(n, seed, points).expect("generation");
        let header = format!(
            "bbrl formula set F{n}: max_size={n} seed={seed} n_points={points} points_range=[{}, {}] size={} \
             tokens=X0 X1 X2 ABS LN SQRT INV OPP SUB DIV ADD2 MUL2 MIN2 MAX2; command: {command}",
            POINTS_RANGE.0,
            POINTS_RANGE.1,
            set.len()
        );
        let path = out.join(format!("F{n}.txt"));
        std::fs::write(&path, format_formula_set(&set, &header)).expect("write the set");
        eprintln!(
            "F{n}: {} formulas, {} nodes, {} formulas evaluated, {} sorts, {:.3} s, threads {} -> {}",
            set.len(),
            stats.nodes,
            stats.evaluated,
            stats.sorts,
            stats.seconds,
            rayon::current_num_threads(),
            path.display()
        );
    }
}
