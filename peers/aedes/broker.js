// broker.js - an MQTT 3.1/3.1.1 broker on aedes and node's net server, as a
// contender of `shootout run` (peers/aedes/README.md): anonymous, every
// session and message in memory, tuned for throughput as aedes documents.
// Not part of the product.
'use strict'

const net = require('net')
const Aedes = require('aedes')

// How long SIGTERM waits for aedes to close its clients before exiting 1.
const STOP_GRACE_MS = 5000

function usage (out) {
  out.write('usage: node broker.js [--port N] [--bind ADDR] [--concurrency N] [--queue-limit N]\n' +
    '  --port N         TCP port, 0 picks a free one (default 1883)\n' +
    '  --bind ADDR      address to listen on (default 127.0.0.1)\n' +
    '  --concurrency N  messages mqemitter delivers at once, 0 no limit (default 0; aedes: 100)\n' +
    '  --queue-limit N  packets a client may send before its CONNACK (default 1000; aedes: 42)\n')
}

function parseArgs (argv) {
  // concurrency 0: mqemitter queues what is over its limit in an array it
  // shift()s once per delivery, which costs more the longer the queue gets
  // (README.md has the measurement); publishers are held back by aedes
  // itself, which reads a client's next packets once its last ones are
  // delivered.
  const opt = { port: 1883, bind: '127.0.0.1', concurrency: 0, queueLimit: 1000 }
  const ints = { '--port': ['port', 0, 65535], '--concurrency': ['concurrency', 0, 1e6], '--queue-limit': ['queueLimit', 1, 1e6] }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--help' || a === '-h') { usage(process.stdout); process.exit(0) }
    if (!(a in ints) && a !== '--bind') { process.stderr.write(`aedes: unknown option ${a}\n`); usage(process.stderr); process.exit(2) }
    const v = argv[++i]
    if (v === undefined) { process.stderr.write(`aedes: ${a} needs a value\n`); process.exit(2) }
    if (a === '--bind') { opt.bind = v; continue }
    const [key, lo, hi] = ints[a]
    if (!/^\d+$/.test(v) || +v < lo || +v > hi) { process.stderr.write(`aedes: bad value for ${a}: '${v}'\n`); process.exit(2) }
    opt[key] = +v
  }
  return opt
}

const opt = parseArgs(process.argv.slice(2))
const broker = new Aedes({ concurrency: opt.concurrency, queueLimit: opt.queueLimit })
const server = net.createServer({ noDelay: true }, broker.handle)

server.on('error', (e) => {
  process.stderr.write(`aedes: cannot listen on ${opt.bind}:${opt.port}: ${e.message}\n`)
  process.exit(1)
})
server.listen(opt.port, opt.bind, () => {
  const a = server.address()
  process.stderr.write(`aedes listening on ${a.address}:${a.port}\n`)
})

let stopping = false
function stop () {
  if (stopping) return
  stopping = true
  setTimeout(() => process.exit(1), STOP_GRACE_MS).unref()
  server.close()
  broker.close(() => process.exit(0))
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
