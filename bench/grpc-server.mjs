// The loopback gRPC server for the gRPC benchmark, in its own process: one unary method that
// answers at once, prints its port, exits with stdin.
import { Server, ServerCredentials } from '@grpc/grpc-js';

const json = {
  serialize: (value) => Buffer.from(JSON.stringify(value)),
  deserialize: (bytes) => JSON.parse(bytes.toString()),
};
const server = new Server();
server.addService(
  {
    Get: {
      path: '/bench.Forecasts/Get',
      requestStream: false,
      responseStream: false,
      requestSerialize: json.serialize,
      requestDeserialize: json.deserialize,
      responseSerialize: json.serialize,
      responseDeserialize: json.deserialize,
    },
  },
  {
    Get: (call, callback) => callback(null, { city: call.request.city, forecast: 'monsoon rain' }),
  },
);
server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  process.stdout.write(`${port}\n`);
});
process.stdin.on('end', () => server.tryShutdown(() => process.exit(0)));
process.stdin.resume();
