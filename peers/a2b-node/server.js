#!/usr/bin/env node
'use strict';
// a2b-node: the a2b service of docs/a2b.md on Node.js (fastify + pg), a
// benchmark peer of `shootout a2b-server --db postgres://...`. Same routes,
// statuses and JSON bytes, same schema and statements (a2b_sql.js), reading
// the database that `shootout a2b-server --db postgres://... --init` fills.
//
//   node server.js --db postgres://user@host:port/db [--port 8080]
//                  [--bind 127.0.0.1] [--pool 4]
//
// Environment: A2B_DB (or DATABASE_URL), A2B_PORT, A2B_BIND, A2B_POOL; the
// flags win. Prints one line `a2b-node listening on ADDR:PORT` on stderr
// when ready; SIGTERM or SIGINT closes the server (in-flight requests
// finish), then the pool, and exits 0.

const Fastify = require('fastify');
const pg = require('pg');
const { SQL } = require('./a2b_sql');
const J = require('./a2b_json');
const B = require('./a2b_body');

const USAGE = `usage: node server.js --db postgres://... [--port N] [--bind ADDR] [--pool N]
  --db URI     PostgreSQL with schema a2b (env A2B_DB or DATABASE_URL)
  --port N     TCP port, default 8080; 0 = a free one (env A2B_PORT)
  --bind ADDR  default 127.0.0.1 (env A2B_BIND)
  --pool N     PostgreSQL connections, default 4 (env A2B_POOL)
`;

function die(msg) {
  process.stderr.write(`a2b-node: ${msg}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const env = process.env;
  const o = {
    db: env.A2B_DB || env.DATABASE_URL || '',
    port: env.A2B_PORT ?? '8080',
    bind: env.A2B_BIND || '127.0.0.1',
    pool: env.A2B_POOL ?? '4',
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') {
      process.stdout.write(USAGE);
      process.exit(0);
    }
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(0, eq) : a;
    const key = { '--db': 'db', '--port': 'port', '-p': 'port', '--bind': 'bind', '-b': 'bind', '--pool': 'pool' }[name];
    if (!key) die(`unknown option ${a}\n${USAGE}`);
    const v = eq > 0 ? a.slice(eq + 1) : argv[++i];
    if (v === undefined) die(`${name} needs a value`);
    o[key] = v;
  }
  if (!/^postgres(ql)?:\/\//.test(o.db)) die(`--db must be a postgres:// URI\n${USAGE}`);
  const port = /^[0-9]{1,5}$/.test(String(o.port)) ? Number(o.port) : -1;
  if (port < 0 || port > 65535) die(`bad port ${o.port}`);
  const pool = /^[0-9]{1,4}$/.test(String(o.pool)) ? Number(o.pool) : 0;
  if (pool < 1) die(`bad pool size ${o.pool}`);
  return { db: o.db, port, bind: o.bind, pool };
}

const cfg = parseArgs(process.argv.slice(2));

// ---- PostgreSQL -------------------------------------------------------------

const pool = new pg.Pool({
  connectionString: cfg.db,
  max: cfg.pool,
  idleTimeoutMillis: 0, // keep the connections, as a2b_pg.c does
  connectionTimeoutMillis: 5000, // bounds a wait for a connection
});
// An idle connection that breaks (PostgreSQL stopped) is dropped by the
// pool; without a listener the error would end the process.
let lastPoolError = 0;
pool.on('error', (err) => {
  const now = Date.now();
  if (now - lastPoolError > 1000) process.stderr.write(`a2b-node: PostgreSQL connection lost: ${err.message}\n`);
  lastPoolError = now;
});

// Named statements are prepared by node-pg on each connection's first use;
// rows come as arrays (the statements repeat column names).
const query = (name, values) => pool.query({ name, text: SQL[name], values, rowMode: 'array' });

// A server-side SQL error is a 500; a connection that could not be had or
// was lost is a 503, as a2b_pg.c answers for its lost connections.
function isConnectionError(err) {
  const code = String(err.code || '');
  if (err.severity && !code.startsWith('08') && !code.startsWith('57P')) return false;
  return true;
}

// ---- HTTP -------------------------------------------------------------------

const JSON_TYPE = 'application/json';

const app = Fastify({
  logger: false,
  bodyLimit: 1024 * 1024, // as a2b-server's --max-body-size
  keepAliveTimeout: 60000, // --idle-timeout
  requestTimeout: 10000, // --request-timeout
  return503OnClosing: true,
  forceCloseConnections: 'idle',
  querystringParser: (s) => s, // read by a2b_body.queryGet (fastify 4: a top-level option)
  clientErrorHandler: (err, socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
    const body = J.error(status, status === 431 ? 'request head too large' : 'malformed request');
    socket.end(`HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\n` +
      `Content-Type: ${JSON_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  },
});

// As a Buffer: fastify appends "; charset=utf-8" to a string's JSON type,
// and a2b-server sends exactly application/json.
function send(reply, status, body) {
  return reply.code(status).header('content-type', JSON_TYPE).send(Buffer.from(body));
}
const fail = (reply, status, message) => send(reply, status, J.error(status, message));

function dbError(reply, err) {
  if (isConnectionError(err)) return fail(reply, 503, 'The database connection was lost');
  process.stderr.write(`a2b-node: ${err.message}\n`);
  return fail(reply, 500, 'Database error');
}

// Bodies: raw bytes for every content type; the routes check the type and
// parse (a2b_body.js).
app.removeAllContentTypeParsers();
app.addContentTypeParser('*', { parseAs: 'buffer' }, (req, body, done) => done(null, body));

app.setNotFoundHandler((req, reply) => fail(reply, 404, 'No such resource'));
app.setErrorHandler((err, req, reply) => {
  const st = err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500;
  if (st === 500) process.stderr.write(`a2b-node: ${err.message}\n`);
  return fail(reply, st, st === 500 ? 'Internal error' : err.message);
});

// Path ids: an empty segment is no route (404), anything but 1-18 digits a 400.
function ids(reply, ...values) {
  for (const v of values) {
    if (v === '') {
      fail(reply, 404, 'No such resource');
      return false;
    }
    if (!B.isId(v)) {
      fail(reply, 400, `Invalid id '${v.slice(0, 40)}': an id is a number`);
      return false;
    }
  }
  return true;
}

function isJsonType(ct) {
  const semi = ct.indexOf(';');
  return (semi >= 0 ? ct.slice(0, semi) : ct).trim().toLowerCase() === JSON_TYPE;
}

// The wanted fields of a POST or PUT body, or null after answering 415/400.
function readBody(req, reply, names) {
  const ct = req.headers['content-type'];
  if (ct !== undefined && !isJsonType(ct)) {
    fail(reply, 415, 'The body must be application/json');
    return null;
  }
  if (!req.body || req.body.length === 0) {
    fail(reply, 400, 'Required request body is missing');
    return null;
  }
  try {
    return B.parseBody(req.body, names);
  } catch (e) {
    if (!(e instanceof B.BodyError)) throw e;
    fail(reply, 400, `Malformed JSON body: ${e.message}`);
    return null;
  }
}

// A list whose parent may be missing: column 0 says whether it exists.
async function listWithParent(reply, name, values, notFound, row) {
  let r;
  try {
    r = await query(name, values);
  } catch (e) {
    return dbError(reply, e);
  }
  const rows = r.rows;
  if (rows[0][0] !== true) return fail(reply, 404, notFound);
  return send(reply, 200, rows[0][1] === null ? '[]' : J.list(rows, row, 1));
}

const nameOk = (s) => s !== null && s.length > 0 && Buffer.byteLength(s) <= 50;
const STATES = new Set(['BOOKED', 'COMPLETED', 'CANCELED']);

// Every route and the methods it takes; the others answer 405 with Allow.
const METHODS = ['DELETE', 'GET', 'HEAD', 'PATCH', 'POST', 'PUT', 'OPTIONS'];
function route(path, handlers) {
  const allowed = Object.keys(handlers);
  for (const m of allowed) app.route({ method: m, url: path, handler: handlers[m] });
  const allow = allowed.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m])).join(', ');
  const others = METHODS.filter((m) => !allow.split(', ').includes(m));
  app.route({
    method: others,
    url: path,
    handler: (req, reply) => fail(reply.header('allow', allow), 405, 'Method not allowed'),
  });
}

// gzip as a2b-server: level 1, for bodies over 1 KiB, when Accept-Encoding
// allows it (q-values honoured), with Vary: Accept-Encoding.
const COMPRESS = {
  global: true,
  encodings: ['gzip'],
  threshold: 1025, // a2b-server compresses bodies over 1024 bytes
  zlibOptions: { level: 1 },
  customTypes: /^application\/json$/,
};

function routes() {
  const API = '/api/v1';

  route(`${API}/countries`, {
    GET: async (req, reply) => {
      try {
        const r = await query('countries', []);
        return send(reply, 200, J.list(r.rows, J.country, 0));
      } catch (e) {
        return dbError(reply, e);
      }
    },
  });

  route(`${API}/countries/:countryId/cities`, {
    GET: async (req, reply) => {
      const { countryId } = req.params;
      if (!ids(reply, countryId)) return reply;
      return listWithParent(reply, 'cities', [countryId], 'Country not found', J.city);
    },
  });

  route(`${API}/countries/:countryId/cities/:cityId/locations`, {
    GET: async (req, reply) => {
      const { countryId, cityId } = req.params;
      if (!ids(reply, countryId, cityId)) return reply;
      return listWithParent(reply, 'locations', [countryId, cityId], 'City not found in the country', J.location);
    },
  });

  route(`${API}/transfers`, {
    GET: async (req, reply) => {
      const qs = typeof req.query === 'string' ? req.query : '';
      const o = B.queryGet(qs, 'originId', 32);
      const d = B.queryGet(qs, 'destinationId', 32);
      const t = B.queryGet(qs, 'date', 32);
      if (o === undefined || d === undefined || t === undefined) return fail(reply, 400, 'Malformed query string');
      if (o === null || d === null)
        return fail(reply, 400, `Required parameter '${o === null ? 'originId' : 'destinationId'}' is not present`);
      if (!B.isId(o.value) || !B.isId(d.value)) return fail(reply, 400, 'originId and destinationId must be numbers');
      if (t === null || !B.isDay(t.value)) return fail(reply, 400, 'The date should be YYYY-MM-DD');
      try {
        const r = await query('transfers', [o.value, d.value, t.value]);
        return send(reply, 200, J.list(r.rows, J.transfer, 0));
      } catch (e) {
        return dbError(reply, e);
      }
    },
  });

  route(`${API}/users/:userId`, {
    GET: async (req, reply) => {
      const { userId } = req.params;
      if (!ids(reply, userId)) return reply;
      try {
        const r = await query('user', [userId]);
        if (r.rows.length === 0) return fail(reply, 404, 'User not found');
        return send(reply, 200, J.user(r.rows[0], 0));
      } catch (e) {
        return dbError(reply, e);
      }
    },
    PUT: async (req, reply) => {
      const { userId } = req.params;
      if (!ids(reply, userId)) return reply;
      const b = readBody(req, reply, ['firstName', 'lastName']);
      if (!b) return reply;
      if (!nameOk(b.firstName) || !nameOk(b.lastName))
        return fail(reply, 400, 'The first and last names should have 1 to 50 bytes');
      try {
        const r = await query('update_user', [userId, b.firstName, b.lastName]);
        if (r.rowCount === 0) return fail(reply, 404, 'User not found');
        return reply.code(204).send();
      } catch (e) {
        return dbError(reply, e);
      }
    },
  });

  route(`${API}/users/:userId/transfers`, {
    GET: async (req, reply) => {
      const { userId } = req.params;
      if (!ids(reply, userId)) return reply;
      return listWithParent(reply, 'bookings', [userId], 'User not found', J.booking);
    },
  });

  route(`${API}/users/:userId/transfers/:transferId`, {
    GET: async (req, reply) => {
      const { userId, transferId } = req.params;
      if (!ids(reply, userId, transferId)) return reply;
      try {
        const r = await query('booking', [userId, transferId]);
        if (r.rows.length === 0) return fail(reply, 404, "User's transfer not found");
        return send(reply, 200, J.booking(r.rows[0], 0));
      } catch (e) {
        return dbError(reply, e);
      }
    },
    POST: async (req, reply) => {
      const { userId, transferId } = req.params;
      if (!ids(reply, userId, transferId)) return reply;
      const b = readBody(req, reply, ['description']);
      if (!b) return reply;
      if (b.description === null) return fail(reply, 400, 'The description should not be null');
      try {
        const row = (await query('book', [userId, transferId, b.description])).rows[0];
        if (row[0] !== true) return fail(reply, 404, 'User not found');
        if (row[1] !== true) return fail(reply, 404, 'Transfer not found');
        if (row[2] !== '1') return fail(reply, 409, 'The transfer is already booked by the user');
        return reply.code(201).send();
      } catch (e) {
        return dbError(reply, e);
      }
    },
    PUT: async (req, reply) => {
      const { userId, transferId } = req.params;
      if (!ids(reply, userId, transferId)) return reply;
      const b = readBody(req, reply, ['description', 'state']);
      if (!b) return reply;
      if (b.state === null || !STATES.has(b.state))
        return fail(reply, 400, 'The state should be BOOKED, COMPLETED or CANCELED');
      if (b.description === null) return fail(reply, 400, 'The description should not be null');
      try {
        const r = await query('update_booking', [userId, transferId, b.state, b.description]);
        if (r.rowCount === 0) return fail(reply, 404, "User's transfer not found");
        return reply.code(204).send();
      } catch (e) {
        return dbError(reply, e);
      }
    },
  });

  const UP = '{"status":"UP"}';
  const DOWN = '{"status":"DOWN"}';

  route('/actuator/health/liveness', { GET: async (req, reply) => send(reply, 200, UP) });
  route('/actuator/health/readiness', {
    GET: async (req, reply) => {
      try {
        await query('ready', []);
        return send(reply, 200, UP);
      } catch {
        return send(reply, 503, DOWN);
      }
    },
  });
}

// ---- Start and stop -----------------------------------------------------------

async function main() {
  // Connect the whole pool before serving, as a2b_pg.c does: a database
  // that cannot be reached is a failed start.
  try {
    const clients = await Promise.all(Array.from({ length: cfg.pool }, () => pool.connect()));
    for (const c of clients) c.release();
  } catch (e) {
    process.stderr.write(`a2b-node: cannot connect to PostgreSQL: ${e.message}\n`);
    process.exit(1);
  }
  // The compress plugin hooks the routes added after it.
  await app.register(require('@fastify/compress'), COMPRESS);
  routes();
  try {
    await app.listen({ port: cfg.port, host: cfg.bind });
  } catch (e) {
    process.stderr.write(`a2b-node: cannot listen on ${cfg.bind}:${cfg.port}: ${e.message}\n`);
    process.exit(1);
  }
  const addr = app.server.address();
  process.stderr.write(`a2b-node listening on ${addr.address}:${addr.port}\n`);

  let closing = false;
  const stop = async () => {
    if (closing) return;
    closing = true;
    const timer = setTimeout(() => {
      process.stderr.write('a2b-node: drain timed out\n');
      process.exit(1);
    }, 10000);
    timer.unref();
    await app.close(); // stops accepting, closes idle connections, lets requests finish
    await pool.end();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main();
