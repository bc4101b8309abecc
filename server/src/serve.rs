//! Serving [`crate::app`] on its own thread: a one-thread tokio runtime, an
//! accept loop with a cap on open connections, a header-read timeout and a
//! lifetime per connection (a slow or idle client cannot hold one forever),
//! a wait after failed accepts (`backoff`: running out of descriptors must
//! not spin a core), and graceful shutdown with a deadline.

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::backoff::AcceptBackoff;
use crate::error::{Result, ServerError};
use crate::state::AppState;

#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub bind: IpAddr,
    /// 0: any free port.
    pub port: u16,
    /// Where to write the chosen `address:port` once listening.
    pub addr_file: Option<PathBuf>,
    /// Connections open at once; more are closed right after accept.
    pub max_connections: usize,
    /// Time a client has to send a request's headers.
    pub header_timeout: Duration,
    /// Longest a connection may stay open.
    pub connection_lifetime: Duration,
    /// A signal to block in the server's threads (the sampling signal).
    pub block_signal: Option<i32>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bind: IpAddr::from([127, 0, 0, 1]),
            port: 0,
            addr_file: None,
            max_connections: 64,
            header_timeout: Duration::from_secs(5),
            connection_lifetime: Duration::from_secs(60),
            block_signal: None,
        }
    }
}

/// The connection a request came on, put into every request's extensions:
/// who sent it (the wrong-token throttle tells clients apart by it) and
/// the address it reached (the session cookie carries its port).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Connection {
    pub peer: SocketAddr,
    pub local: SocketAddr,
}

/// Requests on one connection that may outlive the connection's lifetime
/// (profile windows: up to `routes::pprof::MAX_SECONDS`), put into every
/// request's extensions. While one is held, the lifetime waits for it, up
/// to [`LONG_REQUEST_GRACE`] beyond the lifetime.
#[derive(Clone, Default)]
pub struct LongRequests(Arc<AtomicUsize>);

/// Held while a long request runs.
pub struct LongRequest(Arc<AtomicUsize>);

impl LongRequests {
    pub fn hold(&self) -> LongRequest {
        self.0.fetch_add(1, Ordering::AcqRel);
        LongRequest(Arc::clone(&self.0))
    }

    fn active(&self) -> bool {
        self.0.load(Ordering::Acquire) > 0
    }
}

impl Drop for LongRequest {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Most a connection with a long request outlives its lifetime: the
/// longest window plus the time to compute its answer.
pub const LONG_REQUEST_GRACE: Duration = Duration::from_secs(crate::routes::pprof::MAX_SECONDS + 60);

/// A running server.
pub struct ServerHandle {
    pub address: SocketAddr,
    shutdown: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
    done: Arc<AtomicBool>,
}

impl ServerHandle {
    /// Stops accepting, lets requests in flight finish, and returns within
    /// about `deadline` whatever happens.
    pub fn shut_down(mut self, deadline: Duration) {
        let _ = self.shutdown.send(true);
        let until = Instant::now() + deadline;
        while !self.done.load(Ordering::Acquire) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
        if self.done.load(Ordering::Acquire) {
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
        }
    }
}

/// Writes `address` to `path` whole or not at all: through a temporary
/// beside it that `tempfile` creates new (never through a planted symlink),
/// mode 0600, with a random name, then renamed over `path`.
fn write_addr_file(path: &std::path::Path, address: SocketAddr) -> std::io::Result<()> {
    let directory = path.parent().filter(|parent| !parent.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    let mut temporary = tempfile::Builder::new().prefix(".pcct-addr.").suffix(".tmp").tempfile_in(directory)?;
    writeln!(temporary, "{address}")?;
    temporary.persist(path).map(drop).map_err(|error| error.error)
}

/// Binds the listener (so the address is known and errors are reported at
/// once) and starts serving on a thread named `pcct-http`.
pub fn start(state: AppState, config: ServerConfig) -> Result<ServerHandle> {
    let wanted = SocketAddr::new(config.bind, config.port);
    let listener = std::net::TcpListener::bind(wanted)
        .map_err(|error| ServerError::Bind { address: wanted.to_string(), reason: error.to_string() })?;
    listener.set_nonblocking(true).map_err(|error| ServerError::Runtime(error.to_string()))?;
    let address = listener.local_addr().map_err(|error| ServerError::Runtime(error.to_string()))?;
    if let Some(path) = &config.addr_file {
        write_addr_file(path, address)
            .map_err(|error| ServerError::Runtime(format!("cannot write {}: {error}", path.display())))?;
    }
    let (shutdown, shutdown_rx) = watch::channel(false);
    let done = Arc::new(AtomicBool::new(false));
    let finished = Arc::clone(&done);
    let block_signal = config.block_signal;
    let thread = std::thread::Builder::new()
        .name("pcct-http".to_string())
        .spawn(move || {
            if let Some(signal) = block_signal {
                pcct_sampler::signal::block_in_current_thread(signal);
            }
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .thread_name("pcct-http-blk")
                .max_blocking_threads(2)
                .build();
            if let Ok(runtime) = runtime {
                runtime.block_on(accept_loop(listener, state, config, shutdown_rx));
                runtime.shutdown_timeout(Duration::from_millis(500));
            }
            finished.store(true, Ordering::Release);
        })
        .map_err(|error| ServerError::Runtime(error.to_string()))?;
    Ok(ServerHandle { address, shutdown, thread: Some(thread), done })
}

async fn accept_loop(
    listener: std::net::TcpListener,
    state: AppState,
    config: ServerConfig,
    mut shutdown: watch::Receiver<bool>,
) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
    let app = crate::app(state);
    let permits = Arc::new(Semaphore::new(config.max_connections.max(1)));
    let mut connections = JoinSet::new();
    let mut backoff = AcceptBackoff::default();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.changed() => break,
        };
        // Reap finished connection tasks so the set does not grow.
        while connections.try_join_next().is_some() {}
        let (stream, peer) = match accepted {
            Ok(accepted) => {
                backoff.succeeded();
                accepted
            }
            Err(error) => {
                // Out of descriptors or memory: wait instead of spinning.
                if let Some(wait) = backoff.failed(&error) {
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = shutdown.changed() => break,
                    }
                }
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let Ok(local) = stream.local_addr() else { continue };
        let long = LongRequests::default();
        let extensions = (axum::Extension(long.clone()), axum::Extension(Connection { peer, local }));
        let service = TowerToHyperService::new(app.clone().layer(extensions.0).layer(extensions.1));
        let limits = (config.header_timeout, config.connection_lifetime, long);
        connections.spawn(serve_connection(stream, service, limits, shutdown.clone(), permit));
    }
    let _ =
        tokio::time::timeout(Duration::from_secs(1), async { while connections.join_next().await.is_some() {} }).await;
}

/// Serves one connection until the client is done, its lifetime is up or
/// the server shuts down; `limits` are the header timeout, the lifetime
/// and the connection's long requests (which hold the lifetime off, up to
/// [`LONG_REQUEST_GRACE`] more), `permit` its place among the open
/// connections.
async fn serve_connection(
    stream: tokio::net::TcpStream,
    service: TowerToHyperService<axum::Router>,
    (header_timeout, lifetime, long): (Duration, Duration, LongRequests),
    mut shutdown: watch::Receiver<bool>,
    permit: OwnedSemaphorePermit,
) {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(header_timeout);
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    let hard_end = tokio::time::Instant::now() + lifetime + LONG_REQUEST_GRACE;
    let mut end = tokio::time::Instant::now() + lifetime;
    loop {
        tokio::select! {
            _ = connection.as_mut() => break,
            _ = tokio::time::sleep_until(end) => {
                if long.active() && end < hard_end {
                    end = (end + Duration::from_millis(250)).min(hard_end);
                    continue;
                }
                connection.as_mut().graceful_shutdown();
                let _ = tokio::time::timeout(Duration::from_secs(1), connection.as_mut()).await;
                break;
            }
            _ = shutdown.changed() => {
                connection.as_mut().graceful_shutdown();
                let _ = tokio::time::timeout(Duration::from_secs(1), connection.as_mut()).await;
                break;
            }
        }
    }
    drop(permit);
}
