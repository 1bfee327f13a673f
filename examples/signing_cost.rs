//! What one delivery's `webhook-signature` costs the sender with each kind
//! of key (issue #50: the sender's CPU per delivery with each scheme):
//! HMAC-SHA256 (`v1`), Ed25519 (`v1a`), and both at once (a switch's
//! overlap), each over a typical 200-byte payload and a 16 KiB one; and
//! RSA2 (SHA256withRSA over a form's sorted parameters, a 2048-bit key
//! made by `openssl genpkey`) over a typical Alipay notification form.
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
    let ed25519 = SigningSecret::generate_for(Signing::Ed25519).expect("hookd makes Ed25519 keys");
    let signers = [
        ("hmac (v1)", Signer::new(std::slice::from_ref(&hmac))),
        ("ed25519 (v1a)", Signer::new(std::slice::from_ref(&ed25519))),
        (
            "both (a switch's overlap)",
            Signer::new(&[ed25519.clone(), hmac.clone()]),
        ),
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
            println!(
                "{name:>6} body, {kind:<26} {:>8.2} µs per signature",
                ns / 1000.0
            );
        }
        println!(
            "{name:>6} body, ed25519 ÷ hmac {:.1}×, median of {ROUNDS} alternated rounds of {PER_ROUND}",
            medians[1] / medians[0]
        );
    }
    rsa2();
}

/// An `rsa2` form: the body rebuilt with `sign` (RSA signing is what costs).
fn rsa2() {
    let dir = std::env::temp_dir().join(format!("hookd-signing-cost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("key.pem");
    let made = std::process::Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
        ])
        .arg(&key)
        .output()
        .expect("openssl makes the RSA key");
    assert!(made.status.success(), "{made:?}");
    let pem = std::fs::read_to_string(&key).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let secret = SigningSecret::parse(&pem).expect("a 2048-bit RSA key");
    let signer = Signer::new(&[secret]);
    let form = b"notify_time=2026-11-28+10%3A15%3A00&notify_type=trade_status_sync&notify_id=ac05099524730693a8b330c5ecf72da9786&app_id=2014072300007148&charset=utf-8&version=1.0&trade_no=2026112822001400001&out_trade_no=2026112800012345&trade_status=TRADE_SUCCESS&total_amount=128.00&buyer_id=2088102146225135&subject=order+2026112800012345";
    let per_round = PER_ROUND / 20;
    let mut rounds = Vec::new();
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for _ in 0..per_round {
            black_box(signer.form("application/x-www-form-urlencoded", black_box(form)));
        }
        rounds.push(started.elapsed().as_nanos() as f64 / per_round as f64);
    }
    println!(
        "{} B form, rsa2 (2048-bit SHA256withRSA)  {:>8.2} µs per signature, median of {ROUNDS} rounds of {per_round}",
        form.len(),
        median(rounds) / 1000.0
    );
}
