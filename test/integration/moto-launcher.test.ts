/**
 * The moto that tenang starts (lib/local/moto_server.py): stock moto with DynamoDB requests served
 * one at a time, because moto's own conditional writes and cancelled-transaction rollbacks are
 * not atomic across its request threads (moto/dynamodb/models/__init__.py: transact_write_items
 * restores deep copies of the tables taken at its start; conditions are checked, then written,
 * without a lock). Those races need unlucky thread switches: seen once by the backoff experiment,
 * not reproducible on demand, so what is tested here is that tenang's platform runs on the
 * launcher. The test starts a launcher of its own on a free port.
 */
import { startLocalEnv, type LocalEnv } from '../../lib/local/env';
import { freePort } from '../../lib/local/ports';
import { isSerializedMoto, MOTO_PROBE_PATH, probeHttp } from '../../lib/local/probes';

jest.setTimeout(120_000);

describe('the moto launcher (lib/local/moto_server.py)', () => {
  let env: LocalEnv;
  let port: number;
  const saved = { AWS_ENDPOINT_URL: process.env.AWS_ENDPOINT_URL };

  beforeAll(async () => {
    delete process.env.AWS_ENDPOINT_URL;
    port = await freePort();
    env = await startLocalEnv({ motoPort: port, log: () => undefined });
  });

  afterAll(async () => {
    await env?.stop();
    if (saved.AWS_ENDPOINT_URL !== undefined) process.env.AWS_ENDPOINT_URL = saved.AWS_ENDPOINT_URL;
  });

  it('when tenang starts moto, it is the launcher (its responses carry the serialized-DynamoDB marker)', async () => {
    // Act
    const probe = await probeHttp(`http://127.0.0.1:${port}${MOTO_PROBE_PATH}`, 5_000);

    // Assess
    expect(env.started).toContain('moto');
    expect(isSerializedMoto(probe)).toBe(true);
  });
});
