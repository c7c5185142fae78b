//! `relanon cluster scheduler|executor`: the processes of a relanon cluster, which
//! `anonymize --cluster` sends a run's shards to (`--features distributed`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Subcommand;
use relanon::pipeline::cluster::{self, Cluster, ExecutorOptions};

#[derive(Subcommand)]
pub enum ClusterCommand {
    /// Ballista's scheduler with relanon's codec: takes a run's shards and hands them to the
    /// executors. Runs until stopped.
    Scheduler {
        /// Host and port to listen on.
        #[arg(long, default_value = "127.0.0.1:50050")]
        bind: SocketAddr,
    },
    /// Ballista's executor with relanon's shard operator: anonymizes the shards its
    /// scheduler hands it, reading the warehouse at the client's path. Runs until stopped.
    Executor {
        /// The scheduler, as df://HOST:PORT.
        #[arg(long, default_value = "df://127.0.0.1:50050")]
        scheduler: String,
        /// Host and port of its data service (the next port serves the scheduler's calls).
        #[arg(long, default_value = "127.0.0.1:50051")]
        bind: SocketAddr,
        /// The name the scheduler and the client reach it by, when not the bind address (a
        /// container's host name).
        #[arg(long, value_name = "HOST")]
        external_host: Option<String>,
        /// Shards it anonymizes at once (each uses every core through its own threads).
        #[arg(long, default_value_t = 1)]
        slots: usize,
        /// Where it keeps the outcomes it hands back until the client has read them.
        #[arg(long, value_name = "DIR")]
        work_dir: Option<PathBuf>,
    },
}

/// Runs a scheduler or an executor until it is stopped.
pub async fn cluster(command: ClusterCommand) -> Result<ExitCode> {
    match command {
        ClusterCommand::Scheduler { bind } => cluster::scheduler(bind).await?,
        ClusterCommand::Executor {
            scheduler,
            bind,
            external_host,
            slots,
            work_dir,
        } => {
            cluster::executor(ExecutorOptions {
                scheduler: Cluster::parse(&scheduler)?,
                bind,
                external_host,
                slots: slots.max(1),
                work_dir,
            })
            .await?
        }
    }
    Ok(ExitCode::SUCCESS)
}
