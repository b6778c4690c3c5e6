// Prefill tokens/s of node-llama-cpp (the npm package, pinned 3.21.1 by bench/vs_llamacpp.sh) on a
// GGUF file with its CPU backend: PROMPT tokens of id 7 evaluated in one batch, timed around the
// evaluation alone. Prints the rate. Used only by bench/vs_llamacpp.sh (NODE_PEER=1).
//   node bench/node_prefill.mjs MODEL PROMPT THREADS
import { createRequire } from "node:module";
import path from "node:path";

const [model, promptArg, threadsArg] = process.argv.slice(2);
const prompt = Number(promptArg ?? 512), threads = Number(threadsArg ?? 2);
const require = createRequire(path.resolve("build/peer/node/package.json"));
const { getLlama } = await import(require.resolve("node-llama-cpp"));

const llama = await getLlama({ gpu: false });
const loaded = await llama.loadModel({ modelPath: model, gpuLayers: 0 });
const context = await loaded.createContext({ contextSize: prompt + 16, batchSize: prompt, threads });
const sequence = context.getSequence();
const tokens = Array(prompt).fill(7);
const start = process.hrtime.bigint();
await sequence.evaluateWithoutGeneratingNewTokens(tokens);
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
console.log((prompt / seconds).toFixed(2));
await context.dispose();
await loaded.dispose();
await llama.dispose();
