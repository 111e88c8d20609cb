// A gRPC client of the Open Inference Protocol, from Node: it loads grpc_service.proto
// at run time (no generated code), checks health and metadata, runs one inference of the
// relu test model with raw_input_contents and prints the result as JSON for the Go test
// to compare: node client.js ADDRESS PROTO IMAGE_JSON
'use strict';
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const [addr, protoPath, imageJSON] = process.argv.slice(2);
const def = protoLoader.loadSync(protoPath, { keepCase: true, longs: Number, defaults: true });
const inference = grpc.loadPackageDefinition(def).inference;
const client = new inference.GRPCInferenceService(addr, grpc.credentials.createInsecure());

function call(method, req) {
  return new Promise((resolve, reject) => {
    client[method](req, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

async function main() {
  const out = {};
  out.live = (await call('ServerLive', {})).live;
  out.ready = (await call('ServerReady', {})).ready;
  const meta = await call('ModelMetadata', { name: 'relu' });
  out.input = meta.inputs[0];
  const image = Float32Array.from(JSON.parse(imageJSON));
  const res = await call('ModelInfer', {
    model_name: 'relu',
    id: 'node-1',
    inputs: [{ name: 'image', datatype: 'FP32', shape: out.input.shape.map((d, i) => (i === 0 ? 1 : d)) }],
    outputs: [{ name: 'pooled' }],
    raw_input_contents: [Buffer.from(image.buffer)],
  });
  out.id = res.id;
  out.output = res.outputs[0];
  const raw = res.raw_output_contents[0];
  out.pooled = Array.from(new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length)));
  try {
    await call('ModelInfer', { model_name: 'nope', inputs: [] });
  } catch (err) {
    out.unknownModelCode = err.code;
  }
  console.log(JSON.stringify(out));
  client.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
