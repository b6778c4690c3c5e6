// Prefill and decode tokens/s of node-llama-cpp (the npm package, pinned 3.21.1 by
// bench/vs_llamacpp.sh) on a GGUF file with its CPU backend. Prefill: PROMPT tokens of id 7
// evaluated in one batch, timed around the evaluation alone. Decode: then GEN tokens of id 7, one
// evaluation call each, through the package's lowest-level evaluation (no sampling), timed from
// the first call to the last; the time includes the package's JavaScript step per call, which
// llama-bench's generation figure does not have. Its generator (sequence.evaluate, greedy) was
// slower still on the AMD EPYC Zen 3 of bench/REPORT.md (23.9 against 26.8 tokens/s, Q4_K_M).
// Prints "prefill decode". Used only by bench/vs_llamacpp.sh (NODE_PEER=1).
//   node bench/node_bench.mjs MODEL PROMPT THREADS GEN
import { createRequire } from "node:module";
import path from "node:path";

const [model, promptArg, threadsArg, genArg] = process.argv.slice(2);
const prompt = Number(promptArg ?? 512), threads = Number(threadsArg ?? 2), gen = Number(genArg ?? 128);
const require = createRequire(path.resolve("build/peer/node/package.json"));
const { getLlama } = await import(require.resolve("node-llama-cpp"));

const llama = await getLlama({ gpu: false });
const loaded = await llama.loadModel({ modelPath: model, gpuLayers: 0 });
const context = await loaded.createContext({ contextSize: prompt + gen + 16, batchSize: prompt, threads });
const sequence = context.getSequence();
const seconds = (start) => Number(process.hrtime.bigint() - start) / 1e9;

let start = process.hrtime.bigint();
await sequence.evaluateWithoutGeneratingNewTokens(Array(prompt).fill(7));
const prefill = prompt / seconds(start);

start = process.hrtime.bigint();
for (let i = 0; i < gen; ++i) await sequence.evaluateWithoutGeneratingNewTokens([7]);
const decode = gen / seconds(start);
console.log(prefill.toFixed(2), decode.toFixed(2));
await context.dispose();
await loaded.dispose();
await llama.dispose();
