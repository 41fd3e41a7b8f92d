/** FlagReader over SSM Parameter Store through Powertools Parameters (B3, B4). */
import type { SSMClient } from '@aws-sdk/client-ssm';
import { SSMProvider } from '@aws-lambda-powertools/parameters/ssm';
import type { FlagReader } from '../../core/reconcile';

/** Reads flag parameters in batches of GetParameters, never from a cache. */
export class SsmFlagReader implements FlagReader {
  // Our own provider: its cache is cleared on every read, which must not evict anyone else's values.
  private readonly provider: SSMProvider;

  /** Reads through `client`; the caller owns its configuration (endpoint, region, tracing). */
  constructor(client: SSMClient) {
    this.provider = new SSMProvider({ awsSdkV3Client: client });
  }

  /** Every named value; a parameter that does not exist reads as undefined. */
  async readAll(names: readonly string[]): Promise<Map<string, string | undefined>> {
    const values = new Map<string, string | undefined>(names.map((name) => [name, undefined]));
    if (names.length === 0) return values;
    // A flag change must be seen at once. maxAge 0 is not enough: getParametersByName caches a
    // fetched value for `maxAge || 5` seconds (Powertools 2.x), so the cache is emptied first.
    this.provider.clearCache();
    const found = await this.provider.getParametersByName<string>(
      Object.fromEntries(names.map((name) => [name, {}])),
      // throwOnError false: a missing parameter is listed under _errors instead of failing the
      // batch. Failures to call SSM at all (throttling, access denied) still throw.
      { maxAge: 0, decrypt: false, throwOnError: false },
    );
    for (const name of names) {
      const value: unknown = found[name];
      if (typeof value === 'string') values.set(name, value);
    }
    return values;
  }
}
