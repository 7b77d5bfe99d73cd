//! A loopback server whose first connection stalls: it is never answered, only read until
//! the client closes it (then `gone` fires). Every later connection goes to `answer`.
//! For the hedging tests: the loser's connection must be closed, and only two sent.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct Stalling {
    pub addr: SocketAddr,
    /// The connections accepted so far.
    pub accepted: Arc<AtomicUsize>,
    /// Fires once the client has closed the stalled first connection.
    pub gone: oneshot::Receiver<()>,
    pub server: JoinHandle<()>,
}

impl Stalling {
    /// After the call: the stalled connection was closed by the client (within a generous
    /// 5 s), and exactly two connections were made (the stalled one and its hedge).
    pub async fn assert_loser_closed_and_two_sent(self) {
        tokio::time::timeout(Duration::from_secs(5), self.gone)
            .await
            .expect("the server saw the stalled request's connection close")
            .unwrap();
        assert_eq!(self.accepted.load(Ordering::SeqCst), 2, "exactly two requests were sent");
        self.server.abort();
    }
}

/// Starts the server on 127.0.0.1, port 0 (any free one).
pub async fn stall_first<F, Fut>(answer: F) -> Stalling
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let (gone_tx, gone) = oneshot::channel::<()>();
    let server = tokio::spawn({
        let accepted = accepted.clone();
        async move {
            let mut gone_tx = Some(gone_tx);
            while let Ok((mut conn, _)) = listener.accept().await {
                let n = accepted.fetch_add(1, Ordering::SeqCst) + 1;
                match gone_tx.take() {
                    Some(gone_tx) if n == 1 => {
                        tokio::spawn(async move {
                            // Stall: never answer; read until the client closes the connection.
                            let mut sink = vec![];
                            let _ = conn.read_to_end(&mut sink).await;
                            let _ = gone_tx.send(());
                        });
                    }
                    _ => {
                        tokio::spawn(answer(conn));
                    }
                }
            }
        }
    });
    Stalling { addr, accepted, gone, server }
}
