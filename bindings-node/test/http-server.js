'use strict';
// A scripted HTTP/1.1 server on loopback for the retryrs/fetch tests, with keep-alive (so
// a leaked connection shows) and counts of what it saw. Each path has a script of steps
// played in order, the last repeating: a status, [status, retryAfter, bodySize], ['slow', ms]
// (200 after ms), or 'reset' (the socket is destroyed with a TCP RST after the request arrives). Unscripted paths: 200 ok.
const http = require('node:http');
const net = require('node:net');

async function startServer() {
  const scripts = new Map();
  const requests = new Map();
  const stats = { accepted: 0, open: 0 };
  const server = http.createServer({ keepAliveTimeout: 5000 }, (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const path = req.url.split('?')[0];
      const seen = requests.get(path) ?? [];
      seen.push({ method: req.method, body: Buffer.concat(chunks).toString() });
      requests.set(path, seen);
      const steps = scripts.get(path) ?? [200];
      const step = steps[Math.min(seen.length, steps.length) - 1];
      if (step === 'reset') {
        req.socket.resetAndDestroy();
        return;
      }
      if (Array.isArray(step) && step[0] === 'slow') {
        // A server that took too long: answers 200 after step[1] ms (if still connected).
        setTimeout(() => {
          if (!res.destroyed) res.end('ok');
        }, step[1]).unref();
        return;
      }
      const [status, retryAfter, size] = Array.isArray(step) ? step : [step, undefined, undefined];
      const body = size !== undefined ? 'x'.repeat(size) : status === 200 ? 'ok' : `HTTP ${status} body`;
      const headers = { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) };
      if (retryAfter !== undefined) headers['retry-after'] = retryAfter;
      res.writeHead(status, headers);
      res.end(req.method === 'HEAD' ? undefined : body);
    });
  });
  server.on('connection', (socket) => {
    stats.accepted++;
    stats.open++;
    socket.on('close', () => stats.open--);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  let n = 0;
  return {
    base,
    stats,
    requests,
    /** A fresh path with this script; returns its URL. */
    script(steps, suffix = '') {
      const path = `/p${++n}${suffix}`;
      scripts.set(path, steps);
      return base + path;
    },
    hits(url) {
      return (requests.get(new URL(url).pathname) ?? []).length;
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A loopback port nobody listens on. */
async function closedPort() {
  const s = net.createServer();
  await new Promise((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address();
  await new Promise((resolve) => s.close(resolve));
  return port;
}

module.exports = { startServer, closedPort };
