//! The `hookd` command: parse arguments, load configuration, start logging,
//! and hand over to the rest of the library.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::{LogFormat, Mode, Settings};
use crate::startup::{open_embedded, shutdown_signal, App, Role};
#[cfg(feature = "server")]
use crate::store::postgres::PgStore;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "hookd",
    version,
    about = "Webhook notification dispatcher: signs, delivers and retries notifications",
    after_help = "Configuration: the defaults (config/default.toml), then --config FILE, then \
                  HOOKD_<SECTION>__<KEY> environment variables.\n\
                  Exit codes: 0 success or clean shutdown; 1 cannot start or failed while \
                  running (e.g. database unreachable); 2 bad command line; 78 invalid \
                  configuration, or an embedded data directory or file open to other \
                  accounts or a symbolic link."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the REST API and the dispatcher (or one of them, with --role).
    Serve {
        /// Configuration file (TOML), layered over the defaults; without
        /// it, HOOKD_CONFIG's (an empty HOOKD_CONFIG names no file).
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Which parts to run.
        #[arg(long, value_enum, default_value = "all")]
        role: Role,
        /// Log format; overrides log.format.
        #[arg(long, value_enum)]
        log_format: Option<LogFormatArg>,
        /// Embedded mode: the directory embedded.path (default hookd.db) is in.
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Apply database migrations (PostgreSQL's, or the embedded file's) and exit.
    Migrate {
        /// Configuration file (TOML), layered over the defaults; without
        /// it, HOOKD_CONFIG's (an empty HOOKD_CONFIG names no file).
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Embedded mode: the directory embedded.path (default hookd.db) is in.
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Copy an embedded hookd's data (a SQLite file) into PostgreSQL, for server mode.
    #[cfg(feature = "server")]
    Copy(crate::copy::CopyArgs),
    /// Copy an embedded hookd's data (a SQLite file) into PostgreSQL: not
    /// in this build, which has no server mode.
    #[cfg(not(feature = "server"))]
    Copy {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Inspect configuration.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Print the API's OpenAPI document, as `GET /openapi.json` serves it.
    Openapi,
    /// Print hookd's version.
    Version,
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Validate the configuration and print the effective values, secrets masked.
    Check {
        /// Configuration file (TOML), layered over the defaults; without
        /// it, HOOKD_CONFIG's (an empty HOOKD_CONFIG names no file).
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Embedded mode: the directory embedded.path (default hookd.db) is in.
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormatArg {
    Text,
    Json,
}

/// Runs the command line the process was started with.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Version => emit(version().as_bytes()),
        Command::Openapi => {
            let mut document = crate::api::openapi::document().to_vec();
            document.push(b'\n');
            emit(&document)
        }
        Command::Config {
            command: ConfigCommand::Check { config, data_dir },
        } => match load(config.as_deref(), data_dir) {
            Ok(settings) => {
                let mode = match settings.mode_line() {
                    Ok(mode) => mode,
                    Err(error) => return config_failure(&error),
                };
                // What serve would refuse of the embedded file and its
                // directory, found here too (nothing is created).
                if settings.mode().is_ok_and(|mode| mode != Mode::Server) {
                    if let Err(error) = crate::store::sqlite::check_existing(
                        &settings.embedded.path,
                        settings.embedded.data_dir.is_some(),
                    ) {
                        return config_failure(&error);
                    }
                }
                let mut out = format!("# mode: {mode}\n");
                for warning in settings.warnings() {
                    out += &format!("# warning: {warning}\n");
                }
                out += &settings.to_masked_toml();
                if settings.dispatcher.default_rate_limit.is_none() {
                    out += "# dispatcher.default_rate_limit: none (only endpoints with their own rate_limit are limited)\n";
                }
                #[cfg(feature = "server")]
                if settings.mode().is_ok_and(|mode| mode == Mode::Server) {
                    for warning in redis_warnings(&settings) {
                        out += &format!("# warning: {warning}\n");
                    }
                }
                emit(out.as_bytes())
            }
            Err(code) => code,
        },
        Command::Migrate { config, data_dir } => {
            let settings = match load(config.as_deref(), data_dir) {
                Ok(settings) => settings,
                Err(code) => return code,
            };
            crate::telemetry::init(settings.log.format, &settings.log.filter);
            run(async move {
                match settings.mode()? {
                    #[cfg(feature = "server")]
                    Mode::Server => {
                        // Migrates whatever database.migrate says.
                        let mut database = settings.database.clone();
                        database.migrate = true;
                        PgStore::connect(&database).await?;
                    }
                    // `Settings::mode` chooses no server mode in this build.
                    #[cfg(not(feature = "server"))]
                    Mode::Server => anyhow::bail!(crate::config::NO_SERVER_MODE),
                    Mode::Embedded { path } => {
                        open_embedded(&settings, &path, true).await?.close().await;
                    }
                }
                tracing::info!("migrations applied");
                Ok(())
            })
        }
        #[cfg(feature = "server")]
        Command::Copy(args) => run(async move { crate::copy::run(args).await.map(|_| ()) }),
        #[cfg(not(feature = "server"))]
        Command::Copy { .. } => fail(&format_args!(
            "hookd copy moves an embedded hookd's data into PostgreSQL, and this hookd was built \
             without server mode (`--no-default-features`, as scripts/run builds it): build it \
             with `cargo build --release` and run target/release/hookd copy"
        )),
        Command::Serve {
            config,
            role,
            log_format,
            data_dir,
        } => {
            let mut settings = match load(config.as_deref(), data_dir) {
                Ok(settings) => settings,
                Err(code) => return code,
            };
            if role != Role::All && settings.mode().is_ok_and(|mode| mode != Mode::Server) {
                return config_failure(&format!(
                    "invalid configuration: --role {} needs server mode (database.url and redis.url): in embedded mode one process runs the API and the dispatcher",
                    role.name()
                ));
            }
            if let Some(refusal) = idle_dispatcher(&settings, role) {
                return config_failure(&refusal);
            }
            if let Some(format) = log_format {
                settings.log.format = match format {
                    LogFormatArg::Text => LogFormat::Text,
                    LogFormatArg::Json => LogFormat::Json,
                };
            }
            crate::telemetry::init(settings.log.format, &settings.log.filter);
            run(async move {
                let app = App::build(settings, role).await?;
                app.run(shutdown_signal()).await
            })
        }
    }
}

/// Why `dispatcher.enabled = false` would leave this process nothing to
/// do, if it would: beside `--role dispatcher`. (Embedded, it is a
/// warning: notifications wait for a hookd with its dispatcher on.)
fn idle_dispatcher(settings: &Settings, role: Role) -> Option<String> {
    (!settings.dispatcher.enabled && role == Role::Dispatcher).then(|| {
        "invalid configuration: `dispatcher.enabled` = false with --role dispatcher leaves the process nothing to do".into()
    })
}

/// The settings, `--data-dir` over them, with a mode chosen: exit code 78
/// when they are invalid or choose none.
fn load(config: Option<&std::path::Path>, data_dir: Option<PathBuf>) -> Result<Settings, ExitCode> {
    // Read here rather than by clap, which takes an empty variable for a
    // --config given without its value.
    let from_env = std::env::var_os("HOOKD_CONFIG")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from);
    let mut settings =
        Settings::load(config.or(from_env.as_deref())).map_err(|error| config_failure(&error))?;
    let mode = settings.mode().map_err(|error| config_failure(&error))?;
    if let Some(dir) = data_dir {
        if mode == Mode::Server {
            return Err(config_failure(
                &"invalid configuration: --data-dir is for embedded mode, and database.url and redis.url are set (server mode)",
            ));
        }
        // The file is the directory's: an absolute embedded.path would leave
        // the directory unused (and unchecked), and `..` would leave it.
        let path = &settings.embedded.path;
        if path.is_absolute()
            || path
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return Err(config_failure(&format!(
                "invalid configuration: `embedded.path` ({}) must name a file inside --data-dir: a relative path without `..`",
                path.display()
            )));
        }
        settings.embedded.path = dir.join(path);
        settings.embedded.data_dir = Some(dir);
    }
    Ok(settings)
}

/// What `config check` can tell of Redis by asking it (within a second;
/// an unreachable Redis is not a configuration error).
#[cfg(feature = "server")]
fn redis_warnings(settings: &Settings) -> Vec<String> {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    // Read-only: a trial check must not record its shard count.
    runtime.block_on(crate::due::redis::inspect(
        &settings.redis,
        std::time::Duration::from_secs(1),
    ))
}

fn run(task: impl std::future::Future<Output = anyhow::Result<()>>) -> ExitCode {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => return fail(&error),
    };
    match runtime.block_on(task) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if unsafe_files(&error) => config_failure(&described(&error)),
        Err(error) if bad_arguments(&error) => {
            eprintln!("hookd: {}", described(&error));
            ExitCode::from(EXIT_USAGE)
        }
        Err(error) => fail(&described(&error)),
    }
}

/// `error` and its causes on one line, as `{:#}` joins them, leaving out a
/// cause whose text the line holds already: sqlx's errors say their cause
/// and name it as their source too, which read "file is not a database:
/// file is not a database".
fn described(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// Whether hookd refused its data directory or a file of the embedded
/// database (open to other accounts, a link): a deployment to fix, like
/// invalid configuration, not a failure to retry.
fn unsafe_files(error: &anyhow::Error) -> bool {
    use crate::store::sqlite::{FileError, LockError, OpenError};
    error.chain().any(|cause| {
        let refused = match (cause.downcast_ref(), cause.downcast_ref()) {
            (Some(OpenError::Files(e)), _) | (_, Some(LockError::Files(e))) => Some(e),
            _ => copy_source_files(cause).or_else(|| cause.downcast_ref::<FileError>()),
        };
        refused.is_some_and(FileError::is_refusal)
    })
}

/// `hookd copy`'s refusal of its source file, if `cause` is one.
fn copy_source_files<'a>(
    cause: &'a (dyn std::error::Error + 'static),
) -> Option<&'a crate::store::sqlite::FileError> {
    #[cfg(feature = "server")]
    if let Some(crate::copy::CopyError::SourceFiles(e)) = cause.downcast_ref() {
        return Some(e);
    }
    #[cfg(not(feature = "server"))]
    let _ = cause;
    None
}

/// Whether the command line itself was wrong (`hookd copy --from
/// ./hookd.db`): exit code 2, as clap's own refusals.
fn bad_arguments(error: &anyhow::Error) -> bool {
    #[cfg(feature = "server")]
    return error.chain().any(|cause| {
        matches!(
            cause.downcast_ref(),
            Some(crate::copy::CopyError::FromNotSqlite | crate::copy::CopyError::ToNotPostgres)
        )
    });
    #[cfg(not(feature = "server"))]
    {
        let _ = error;
        false
    }
}

/// Exit code for a wrong command line, as clap's.
const EXIT_USAGE: u8 = 2;

/// One line on stderr, exit code 1.
fn fail(error: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("hookd: {error}");
    ExitCode::FAILURE
}

/// Exit code for invalid configuration: `EX_CONFIG` from sysexits(3), so a
/// supervisor can tell "fix the config" from "try again later".
const EXIT_CONFIG: u8 = 78;

/// `hookd version`: the build's version and the newest migration of each
/// schema it brings a database to, so that an operator can tell builds of
/// one version apart and see which schema a database needs
/// (`_sqlx_migrations` holds what it has).
fn version() -> String {
    let newest = |migrator: &sqlx::migrate::Migrator| {
        migrator.iter().map(|m| m.version).max().unwrap_or_default()
    };
    #[cfg(feature = "server")]
    return format!(
        "hookd {} (schema: PostgreSQL {}, embedded {})\n",
        env!("CARGO_PKG_VERSION"),
        newest(&crate::store::postgres::MIGRATOR),
        newest(&crate::store::sqlite::MIGRATOR),
    );
    #[cfg(not(feature = "server"))]
    format!(
        "hookd {} (schema: embedded {}; built without server mode)\n",
        env!("CARGO_PKG_VERSION"),
        newest(&crate::store::sqlite::MIGRATOR),
    )
}

/// Writes a command's output to stdout. A reader that stopped reading
/// (`hookd openapi | head`) ends the output, not the command: no panic,
/// no error line, exit 0, as a reader that has all it wanted expects.
fn emit(output: &[u8]) -> ExitCode {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(output).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("hookd: cannot write the output: {error}");
            ExitCode::FAILURE
        }
    }
}

/// One line on stderr, exit code 78.
fn config_failure(error: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("hookd: {error}");
    ExitCode::from(EXIT_CONFIG)
}
