// The loopback server for the fetch benchmark, in its own process so it does not share the
// client's event loop: answers every request with a small 200, prints its port, exits with stdin.
import { createServer } from 'node:http';

const body = JSON.stringify({ city: 'Bhopal', forecast: 'monsoon rain' });
const server = createServer((_req, res) => {
  res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.stdin.on('end', () => server.close(() => process.exit(0)));
process.stdin.resume();
