// Preloaded into the benchmark's gateway (`node --expose-gc --import …/gateway-gc-hook.js`): on
// SIGUSR2 it runs three full garbage collections 100 ms apart (V8 returns freed pages lazily) and
// prints one stdout line {"bench_gc":{"heap_used","external","rss"}} (bytes), so the idle-session
// figure is retained memory, not GC timing. Nothing else changes in the gateway.
const gc = (globalThis as { gc?: () => void }).gc;
process.on('SIGUSR2', () => {
  let left = 3;
  const step = () => {
    gc?.();
    if (--left > 0) {
      setTimeout(step, 100);
      return;
    }
    const m = process.memoryUsage();
    process.stdout.write(JSON.stringify({ bench_gc: { heap_used: m.heapUsed, external: m.external, rss: m.rss } }) + '\n');
  };
  step();
});
