// The bench's node-oidc-provider peer (go run ./bench -peers): the
// authorization server an operator might run instead of the gateway's,
// configured as the bench's gateway school is: one public client with
// PKCE, ES256 ID tokens, rotating refresh tokens, opaque access tokens,
// everything in memory. It is not a test; it lives here so that it
// resolves oidc-provider from this package's node_modules (npm ci).
//
//	node bench/oidc-provider.mjs <port>
//
// Besides the provider's own endpoints it answers two bench-only paths:
// POST /bench/codes?n=N mints N authorization codes, each with a grant of
// its own, as the consent step of a real sign-in would have stored them
// (the bench does not time this), and answers [{code, verifier}];
// POST /bench/reset empties the store between rounds. It prints "ready"
// on stdout once it listens.
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import Provider from 'oidc-provider';

const port = Number(process.argv[2]);
const issuer = `http://127.0.0.1:${port}`;
const clientID = 'bench-agent';
const redirectURI = 'https://bench-agent.example/callback';
const scope = 'openid profile email account:read';

// storage is the whole store: model name → id → {payload, expiresAt}.
// The provider's built-in memory adapter keeps at most 1,000 entries, too
// few for a round of the bench.
let storage = new Map();

class MapAdapter {
  constructor(name) { this.name = name; }

  table() {
    let t = storage.get(this.name);
    if (!t) {
      t = new Map();
      storage.set(this.name, t);
    }
    return t;
  }

  async upsert(id, payload, expiresIn) {
    this.table().set(id, { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
  }

  async find(id) {
    const e = this.table().get(id);
    if (!e) return undefined;
    if (e.expiresAt <= Date.now()) {
      this.table().delete(id);
      return undefined;
    }
    return e.payload;
  }

  async findByUid(uid) {
    for (const { payload } of this.table().values()) if (payload.uid === uid) return payload;
    return undefined;
  }

  async findByUserCode(userCode) {
    for (const { payload } of this.table().values()) if (payload.userCode === userCode) return payload;
    return undefined;
  }

  async consume(id) {
    const e = this.table().get(id);
    if (e) e.payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) { this.table().delete(id); }

  async revokeByGrantId(grantId) {
    for (const t of storage.values()) {
      for (const [id, { payload }] of t) if (payload.grantId === grantId) t.delete(id);
    }
  }
}

const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'bench-es256', alg: 'ES256', use: 'sig' };

const provider = new Provider(issuer, {
  adapter: MapAdapter,
  clients: [{
    client_id: clientID,
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    redirect_uris: [redirectURI],
    id_token_signed_response_alg: 'ES256',
  }],
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString('base64url')] },
  scopes: ['openid', 'offline_access', 'account:read'],
  claims: { openid: ['sub'], profile: ['name'], email: ['email', 'email_verified'] },
  findAccount: async (_ctx, sub) => ({
    accountId: sub,
    claims: async () => ({ sub, name: 'Bench Student', email: 'student@bench.example', email_verified: true }),
  }),
  features: { devInteractions: { enabled: false } },
  // As the gateway's: the ID token carries the person's claims itself.
  conformIdTokenClaims: false,
  // As the gateway: a refresh token with every grant, rotated on use.
  issueRefreshToken: async () => true,
  rotateRefreshToken: true,
  ttl: { AccessToken: 3600, AuthorizationCode: 600, IdToken: 600, RefreshToken: 30 * 24 * 3600, Grant: 30 * 24 * 3600 },
});

// mintCodes stores n codes as the authorization endpoint would after
// consent: a grant of its own for each, the code bound to its PKCE
// challenge.
async function mintCodes(n) {
  const client = await provider.Client.find(clientID);
  const out = [];
  for (let i = 0; i < n; i++) {
    const grant = new provider.Grant({ accountId: 'member-1', clientId: clientID });
    grant.addOIDCScope(scope);
    const grantId = await grant.save();
    const verifier = randomBytes(32).toString('base64url');
    const code = await new provider.AuthorizationCode({
      accountId: 'member-1', client, grantId, scope, redirectUri: redirectURI,
      codeChallenge: createHash('sha256').update(verifier).digest('base64url'), codeChallengeMethod: 'S256',
      authTime: Math.floor(Date.now() / 1000),
    }).save();
    out.push({ code, verifier });
  }
  return out;
}

provider.use(async (ctx, next) => {
  if (ctx.method === 'POST' && ctx.path === '/bench/codes') {
    ctx.body = await mintCodes(Math.min(Number(ctx.query.n) || 1, 100000));
    return;
  }
  if (ctx.method === 'POST' && ctx.path === '/bench/reset') {
    storage = new Map();
    ctx.status = 204;
    return;
  }
  await next();
});

const server = provider.listen(port, '127.0.0.1', () => console.log('ready'));
// Node closes idle connections after 5 s; the bench's client keeps them
// across a round of the gateway's, as Caddy's server does.
server.keepAliveTimeout = 120_000;
server.headersTimeout = 121_000;
