// The npm package advisory-lock (PostgreSQL advisory locks for Node.js) as a peer of sqllock's
// advisory_lock: lock() + unlock() cycles on one key per concurrent loop, for a fixed time.
// usage: NODE_PATH=<dir>/node_modules node advisory_lock_peer.js POSTGRES_URI SECONDS LOOPS
// Prints one JSON object: {"cycles_per_s", "p50_us", "p99_us", "cycles"}.
const advisoryLock = require('advisory-lock').default;

const [uri, seconds, loops] = [process.argv[2], Number(process.argv[3] || 3), Number(process.argv[4] || 1)];

async function loop(index, until, samples) {
  const mutex = advisoryLock(uri)(`peer-cycle-${index}`);
  for (let i = 0; i < 5; i++) await (await mutex.lock())();  // warm-up
  while (process.hrtime.bigint() < until) {
    const t0 = process.hrtime.bigint();
    const unlock = await mutex.lock();
    await unlock();
    samples.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
}

function quantile(sorted, q) {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

async function main() {
  const samples = [];
  const start = process.hrtime.bigint();
  const until = start + BigInt(Math.round(seconds * 1e9));
  await Promise.all(Array.from({ length: loops }, (_, i) => loop(i, until, samples)));
  const elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  samples.sort((a, b) => a - b);
  console.log(JSON.stringify({
    cycles_per_s: samples.length / elapsed, p50_us: quantile(samples, 0.5), p99_us: quantile(samples, 0.99),
    cycles: samples.length,
  }));
}

main().catch((e) => { console.error(e); process.exit(1); });
