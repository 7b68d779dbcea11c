// server.js - the Car service (com.stevenpg.rvg.MessageService/send, and
// grpc.health.v1.Health/Check) on @grpc/grpc-js, h2c, as a contender of
// `shootout run` (peers/node-grpc/README.md). It loads src/car's protos at
// start and answers as peers/grpc-cpp does. Not part of the product.
'use strict'

const path = require('path')
const grpc = require('@grpc/grpc-js')
const protoLoader = require('@grpc/proto-loader')

const PROTO_DIR = path.join(__dirname, '..', '..', 'src', 'car')
const MAX_RECEIVE_MESSAGE = 4 * 1024 * 1024 // grpc's default, as the C++ peer
// How long in-flight calls get to finish on SIGTERM before being cancelled.
const SHUTDOWN_GRACE_MS = 2000

function usage (out) {
  out.write('usage: node server.js [--port N] [--bind ADDR]\n' +
    '  --port N     TCP port, 0 (default) picks a free one\n' +
    '  --bind ADDR  IPv4 or IPv6 address to listen on (default 127.0.0.1)\n')
}

function parseArgs (argv) {
  const opt = { port: 0, bind: '127.0.0.1' }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--help' || a === '-h') { usage(process.stdout); process.exit(0) }
    if (a !== '--port' && a !== '--bind') { process.stderr.write(`node-grpc: unknown option ${a}\n`); usage(process.stderr); process.exit(2) }
    const v = argv[++i]
    if (v === undefined) { process.stderr.write(`node-grpc: ${a} needs a value\n`); process.exit(2) }
    if (a === '--bind') opt.bind = v
    else if (/^\d+$/.test(v) && +v <= 65535) opt.port = +v
    else { process.stderr.write(`node-grpc: bad value for --port: '${v}'\n`); process.exit(2) }
  }
  return opt
}

const opt = parseArgs(process.argv.slice(2))
// keepCase: the proto's own field names (driverId), as the C++ peer sees them.
const defs = protoLoader.loadSync(['car.proto', 'health.proto'], { includeDirs: [PROTO_DIR], keepCase: true })
const proto = grpc.loadPackageDefinition(defs)
const carService = proto.com.stevenpg.rvg.MessageService
const CAR_SERVICE_NAME = 'com.stevenpg.rvg.MessageService'
const SERVING = 'SERVING'

const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_RECEIVE_MESSAGE })
server.addService(carService.service, {
  // The article's server answers every record with this status.
  send (call, callback) { callback(null, { status: 'successful' }) }
})
server.addService(proto.grpc.health.v1.Health.service, {
  // "" is the whole server, a known service name is that service, anything
  // else is NOT_FOUND.
  Check (call, callback) {
    const name = call.request.service || '' // proto3: an absent string is ""
    if (name !== '' && name !== CAR_SERVICE_NAME) {
      callback({ code: grpc.status.NOT_FOUND, details: 'unknown service' })
      return
    }
    callback(null, { status: SERVING })
  }
})

const host = opt.bind.includes(':') && !opt.bind.startsWith('[') ? `[${opt.bind}]` : opt.bind
server.bindAsync(`${host}:${opt.port}`, grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) {
    process.stderr.write(`node-grpc: cannot listen on ${host}:${opt.port}: ${err.message}\n`)
    process.exit(1)
  }
  process.stderr.write(`node-grpc listening on ${host}:${port}\n`)
})

let stopping = false
function stop () {
  if (stopping) return
  stopping = true
  const force = setTimeout(() => { server.forceShutdown(); process.exit(0) }, SHUTDOWN_GRACE_MS)
  server.tryShutdown(() => { clearTimeout(force); process.exit(0) })
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
