/**
 * C4 against a real Redis: 500 concurrent readers of one expired hot key, spread over 10
 * simulated function instances (each its own connection and in-process single-flight), make
 * about one load. The same measurement, without protection, shows what it prevents.
 */
import { measureStampede } from '../../harness/stampede';
import { uniqueName } from '../helpers/aws';

jest.setTimeout(60_000);

function redisUrl(): string {
  const url = process.env.REDIS_URL;
  if (url === undefined) throw new Error('REDIS_URL is not set: run through the jest integration project');
  return url;
}

describe('Function: measureStampede', () => {
  it('when 500 readers over 10 instances hit one expired key at once, about one load reaches the source of truth and every read is served', async () => {
    // Act
    const result = await measureStampede({
      redisUrl: redisUrl(),
      readers: 500,
      instances: 10,
      loaderLatencyMs: 20,
      keyPrefix: `${uniqueName('it-stampede')}:`,
    });

    // Assess
    expect(result.loaderCalls).toBeLessThanOrEqual(2);
    expect(result.sources.hit + result.sources.miss).toBe(500);
    expect(result.sources.bypass).toBe(0);
    // In-process single-flight: one flight per instance, so Redis sees tens of commands, not thousands.
    expect(result.cacheCommands).toBeLessThan(500);
  });

  it('when only in-process single-flight guards the key, every instance loads once', async () => {
    // Act
    const result = await measureStampede({
      redisUrl: redisUrl(),
      readers: 500,
      instances: 10,
      protection: 'single-flight',
      keyPrefix: `${uniqueName('it-stampede')}:`,
    });

    // Assess
    expect(result.loaderCalls).toBe(10);
  });

  it('when nothing guards the key, the readers stampede the source of truth', async () => {
    // Act
    const result = await measureStampede({
      redisUrl: redisUrl(),
      readers: 500,
      instances: 10,
      protection: 'none',
      keyPrefix: `${uniqueName('it-stampede')}:`,
    });

    // Assess
    expect(result.loaderCalls).toBeGreaterThan(100);
  });
});
