// server.js - the Car service's REST side (POST /v1/create, GET /healthz) on
// fastify, as a contender of `shootout run` (peers/node-fastify/README.md):
// the statuses and bodies of `shootout car-server` (src/car/car_rest.c,
// car_json.c) for the article's document and the routing errors. Not part
// of the product.
'use strict'

const Fastify = require('fastify')

const MAX_BODY = 1048576 // car-server's --max-body-size default
const JSON_TYPE = 'application/json'
const CREATED = '{"status":"created"}'
const OK = '{"status":"ok"}'
const U32_MAX = 4294967295

// The document's shape (docs/car_json.md), in car_json.c's field order.
const CAR = ['car', [['make', 's'], ['model', 's'], ['trim', 's'], ['color', 's'], ['year', 'u'], ['mileage', 'u']]]
const DRIVER = ['driver', [['firstname', 's'], ['lastname', 's'], ['driverId', 's']]]

function usage (out) {
  out.write('usage: node server.js [--port N] [--bind ADDR]\n' +
    '  --port N     TCP port, 0 picks a free one (default 8080)\n' +
    '  --bind ADDR  address to listen on (default 127.0.0.1)\n')
}

function parseArgs (argv) {
  const opt = { port: 8080, bind: '127.0.0.1' }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--help' || a === '-h') { usage(process.stdout); process.exit(0) }
    if (a !== '--port' && a !== '--bind') { process.stderr.write(`node-fastify: unknown option ${a}\n`); usage(process.stderr); process.exit(2) }
    const v = argv[++i]
    if (v === undefined) { process.stderr.write(`node-fastify: ${a} needs a value\n`); process.exit(2) }
    if (a === '--bind') opt.bind = v
    else if (/^\d+$/.test(v) && +v <= 65535) opt.port = +v
    else { process.stderr.write(`node-fastify: bad value for --port: '${v}'\n`); process.exit(2) }
  }
  return opt
}

function error (text, field) {
  return field ? `{"error":"${text}","field":"${field}"}` : `{"error":"${text}"}`
}

function isObject (v) { return typeof v === 'object' && v !== null && !Array.isArray(v) }

// car_json's verdict on a parsed document: null when it is a record, else
// the 400 body (car_json's texts and field names; no offset, see README).
function check (doc) {
  if (!isObject(doc)) return error('wrong type')
  for (const [name, fields] of [CAR, DRIVER]) {
    const sub = doc[name]
    if (sub === undefined) return error('missing field', name)
    if (!isObject(sub)) return error('wrong type', name)
    for (const [f, kind] of fields) {
      const v = sub[f]
      const path = name + '.' + f
      if (v === undefined) return error('missing field', path)
      if (kind === 's') {
        if (typeof v !== 'string') return error('wrong type', path)
        if (v.includes('\u0000')) return error('string contains U+0000', path)
      } else {
        if (typeof v !== 'number') return error('wrong type', path)
        if (!Number.isInteger(v) || v < 0 || v > U32_MAX || Object.is(v, -0)) return error('not an integer in 0..4294967295', path)
      }
    }
  }
  return null
}

// The media type, any case, any parameters: as http1_media_type_is.
function isJson (contentType) {
  return typeof contentType === 'string' && contentType.split(';')[0].trim().toLowerCase() === JSON_TYPE
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

const opt = parseArgs(process.argv.slice(2))
const app = Fastify({ logger: false, bodyLimit: MAX_BODY })

// The body arrives as bytes, whatever its type: the route says 415 itself,
// and invalid UTF-8 is refused rather than replaced.
app.removeAllContentTypeParsers()
app.addContentTypeParser('*', { parseAs: 'buffer' }, (req, body, done) => done(null, body))

// The body is already JSON: a serializer of its own keeps fastify from
// adding "; charset=utf-8" to car-server's Content-Type.
function asIs (body) { return body }

function send (reply, status, body, allow) {
  reply.code(status).type(JSON_TYPE).serializer(asIs)
  if (allow) reply.header('allow', allow)
  return reply.send(body)
}

app.post('/v1/create', async (req, reply) => {
  if (!isJson(req.headers['content-type'])) return send(reply, 415, error('content type must be application/json'))
  let doc
  try {
    doc = JSON.parse(utf8.decode(req.body || Buffer.alloc(0)))
  } catch (e) {
    return send(reply, 400, error(e instanceof TypeError ? 'invalid UTF-8'
      : /end of JSON input/.test(e.message) ? 'unexpected end of input' : 'malformed JSON'))
  }
  const bad = check(doc)
  return bad ? send(reply, 400, bad) : send(reply, 201, CREATED)
})
app.route({
  method: ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'],
  url: '/v1/create',
  handler: async (req, reply) => send(reply, 405, error('method not allowed'), 'POST')
})
app.get('/healthz', async (req, reply) => send(reply, 200, OK))
app.route({
  method: ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'],
  url: '/healthz',
  handler: async (req, reply) => send(reply, 405, error('method not allowed'), 'GET, HEAD')
})
app.setNotFoundHandler(async (req, reply) => send(reply, 404, error('not found')))
app.setErrorHandler(async (err, req, reply) => {
  if (err.statusCode === 413) return send(reply, 413, error('body too large'))
  return send(reply, err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500, error('bad request'))
})

app.listen({ port: opt.port, host: opt.bind }).then(() => {
  const a = app.server.address()
  process.stderr.write(`node-fastify listening on ${a.address}:${a.port}\n`)
}, (e) => {
  process.stderr.write(`node-fastify: cannot listen on ${opt.bind}:${opt.port}: ${e.message}\n`)
  process.exit(1)
})

let stopping = false
function stop () {
  if (stopping) return
  stopping = true
  // Requests in flight get 2 s; fastify closes idle keep-alive connections.
  setTimeout(() => process.exit(1), 2000).unref()
  app.close().then(() => process.exit(0))
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
