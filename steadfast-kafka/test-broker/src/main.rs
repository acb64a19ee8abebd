//! The Kafka-protocol broker the Kafka log's tests start: tansu's broker (the
//! `tansu-broker` crate, 0.6.0, with its SQLite storage engine) behind a command line of
//! its own, built by `scripts/test` without the rest of tansu's tools (its command-line
//! crate, producers, consumers, data-lake and telemetry exporters), which take most of
//! the time a full `cargo install tansu` spends.
//!
//! It takes the subset of `tansu broker`'s arguments the tests pass, so a full `tansu`
//! binary can stand in for it (`STEADFAST_TANSU`):
//! `steadfast-test-broker [broker] --listener-url URL --advertised-listener-url URL
//! --storage-engine URL`.

use std::process::ExitCode;

use tansu_broker::broker::Broker;
use tansu_broker::coordinator::group::administrator::Controller;
use tansu_broker::NODE_ID;
use tansu_storage::StorageContainer;
use url::Url;

/// The broker's settings, from the command line.
struct Settings {
    listener: Url,
    advertised: Url,
    storage: Url,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Settings, String> {
    let (mut listener, mut advertised, mut storage) = (None, None, None);
    while let Some(arg) = args.next() {
        let slot = match arg.as_str() {
            "broker" => continue,
            "--listener-url" => &mut listener,
            "--advertised-listener-url" => &mut advertised,
            "--storage-engine" => &mut storage,
            other => return Err(format!("unknown argument {other:?}")),
        };
        let value = args.next().ok_or(format!("{arg} needs a value"))?;
        let url = Url::parse(&value).map_err(|e| format!("{arg} {value:?}: {e}"))?;
        *slot = Some(url);
    }
    let listener = listener.ok_or("--listener-url is required")?;
    Ok(Settings {
        advertised: advertised.unwrap_or_else(|| listener.clone()),
        listener,
        storage: storage.ok_or("--storage-engine is required")?,
    })
}

async fn serve(settings: Settings) -> Result<(), String> {
    let broker = Broker::<Controller<StorageContainer>, StorageContainer>::builder()
        .node_id(NODE_ID)
        .cluster_id("steadfast-tests".to_string())
        .incarnation_id(uuid::Uuid::now_v7())
        .advertised_listener(settings.advertised)
        .otlp_endpoint_url(None)
        .schema_registry(None)
        .storage(settings.storage)
        .listener(settings.listener)
        .authentication(false)
        .tls_server_config(None)
        .silent(true)
        .build()
        .await
        .map_err(|e| format!("starting the broker: {e:?}"))?;
    broker
        .main(tokio::time::Instant::now())
        .await
        .map(|_| ())
        .map_err(|e| format!("the broker stopped: {e:?}"))
}

fn main() -> ExitCode {
    let outcome = parse(std::env::args().skip(1)).and_then(|settings| {
        tokio::runtime::Runtime::new()
            .map_err(|e| format!("starting the runtime: {e}"))?
            .block_on(serve(settings))
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("steadfast-test-broker: {message}");
            ExitCode::from(2)
        }
    }
}
