//! What the benchmark's helper processes (`client_alone`, `floor_dispatcher`)
//! share: the CPU they report, and hookd's sender as the bench's hookd has it.

use hookd::config::{SenderSettings, Settings};

/// This process's CPU seconds so far, user + system (/proc/self/stat).
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // utime and stime are fields 14 and 15; the text after the command's
    // closing parenthesis starts at field 3.
    let (_, rest) = stat.rsplit_once(") ").unwrap();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

/// hookd's sender as the bench's hookd has it: `config/default.toml`, with
/// loopback allowed and the bench's `max_in_flight`.
pub fn sender_settings(in_flight: usize) -> SenderSettings {
    Settings::from_toml_layers(&[&format!(
        "[sender]\nallow_networks = [\"127.0.0.0/8\"]\nmax_in_flight = {in_flight}\n"
    )])
    .expect("the bench's sender settings are valid")
    .sender
}
