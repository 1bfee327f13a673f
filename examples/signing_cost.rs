//! What one delivery's `webhook-signature` costs the sender with each kind
//! of key (issue #50: the sender's CPU per delivery with each scheme):
//! HMAC-SHA256 (`v1`), Ed25519 (`v1a`), and both at once (a switch's
//! overlap), each over a typical 200-byte payload and a 16 KiB one.
//! Rounds alternate the kinds so that each sees the same machine; prints
//! the median of the rounds' ns per signature, and Ed25519 ÷ HMAC.
//!
//! `cargo run --release --example signing_cost`

use std::hint::black_box;
use std::time::Instant;

use hookd::domain::secret::{Signing, SigningSecret};
use hookd::sender::signature::Signer;

const ROUNDS: usize = 7;
const PER_ROUND: usize = 20_000;

fn ns_per_header(signer: &Signer, body: &[u8]) -> f64 {
    let started = Instant::now();
    for i in 0..PER_ROUND {
        black_box(signer.header("msg_2Lh3QkX7c9", 1_764_590_000 + i as i64, black_box(body)));
    }
    started.elapsed().as_nanos() as f64 / PER_ROUND as f64
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let hmac = SigningSecret::generate();
    let ed25519 = SigningSecret::generate_for(Signing::Ed25519);
    let signers = [
        ("hmac (v1)", Signer::new(std::slice::from_ref(&hmac))),
        ("ed25519 (v1a)", Signer::new(std::slice::from_ref(&ed25519))),
        ("both (a switch's overlap)", Signer::new(&[ed25519.clone(), hmac.clone()])),
    ];
    let small = br#"{"order":"2026112800012345","status":"paid","amount":"128.00","currency":"CNY","paid_at":"2026-11-28T10:15:00Z","buyer":{"id":"2088102146225135","tier":"gold"},"trade_no":"2026112822001400001"}"#.to_vec();
    let large = vec![b'x'; 16 * 1024];
    for (name, body) in [("200 B", &small), ("16 KiB", &large)] {
        let mut rounds: Vec<Vec<f64>> = vec![Vec::new(); signers.len()];
        for _ in 0..ROUNDS {
            for (i, (_, signer)) in signers.iter().enumerate() {
                rounds[i].push(ns_per_header(signer, body));
            }
        }
        let medians: Vec<f64> = rounds.into_iter().map(median).collect();
        for ((kind, _), ns) in signers.iter().zip(&medians) {
            println!("{name:>6} body, {kind:<26} {:>8.2} µs per signature", ns / 1000.0);
        }
        println!(
            "{name:>6} body, ed25519 ÷ hmac {:.1}×, median of {ROUNDS} alternated rounds of {PER_ROUND}",
            medians[1] / medians[0]
        );
    }
}
