//! A loopback HTTP server for the middleware tests: it answers the n-th connection with
//! the n-th scripted response (`Connection: close`), and records each request's method
//! and head.

use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A response: status and extra header lines.
pub struct Reply(pub u16, pub &'static str);

pub struct Server {
    pub url: String,
    pub methods: Arc<Mutex<Vec<String>>>,
    /// Each request's head (request line and headers), in order (read by
    /// tests/propagation.rs; the other suites sharing this server do not look).
    #[allow(dead_code)]
    pub heads: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub fn requests(&self) -> usize {
        self.methods.lock().unwrap().len()
    }
}

/// Starts the server on 127.0.0.1, port 0 (any free one).
pub async fn serve(script: Vec<Reply>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/rates", listener.local_addr().unwrap());
    let methods = Arc::new(Mutex::new(vec![]));
    let heads = Arc::new(Mutex::new(vec![]));
    let (seen, heads_seen) = (methods.clone(), heads.clone());
    tokio::spawn(async move {
        for Reply(status, headers) in script {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let mut request = vec![];
            let mut buf = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match socket.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let text = String::from_utf8_lossy(&request);
            seen.lock().unwrap().push(text.split(' ').next().unwrap_or("").to_string());
            heads_seen.lock().unwrap().push(text.into_owned());
            let body = format!("status {status}");
            let reply = format!(
                "HTTP/1.1 {status} X\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(reply.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    });
    Server { url, methods, heads }
}
