//! The `hookd` command (`hookd::cli`), with its allocator.
#![forbid(unsafe_code)]

/// mimalloc instead of glibc's malloc: a profile of the dispatcher under load
/// spent more than a quarter of hookd's time in glibc's malloc, free and
/// consolidation (BENCHMARKS.md, history, "sessions 2 and 3"). It asks for
/// transparent huge pages; Cargo.toml says why that stays.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    hookd::cli::main()
}
