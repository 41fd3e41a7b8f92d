/** The stage's degrade flag (B3) through Powertools Parameters, cached for a few seconds per instance. */
import type { SSMClient } from '@aws-sdk/client-ssm';
import { ParameterNotFoundError } from '@aws-lambda-powertools/parameters/errors';
import { SSMProvider } from '@aws-lambda-powertools/parameters/ssm';
import { readDegradeFlag } from '../../core/flags';

/** @default 5 s: a flag change reaches every instance within seconds, at one GetParameter per instance per 5 s. */
export const DEGRADE_FLAG_MAX_AGE_SECONDS = 5;

/** Reads `/tenang/<stage>/flags/degrade`. */
export class SsmDegradeFlag {
  private readonly provider: SSMProvider;
  /**
   * The read under way, shared by the callers that ask meanwhile: a batch's records all ask at
   * once, and when the cached value has expired each would otherwise send its own GetParameter.
   */
  private reading: Promise<boolean> | undefined;

  /** Reads `name` through `client`; the caller owns the client's configuration. */
  public constructor(
    client: SSMClient,
    private readonly name: string,
    private readonly maxAgeSeconds: number = DEGRADE_FLAG_MAX_AGE_SECONDS,
  ) {
    this.provider = new SSMProvider({ awsSdkV3Client: client });
  }

  /**
   * Whether the stage is degraded. A missing parameter or an unreadable value means not
   * degraded; a failure to reach SSM throws (the caller decides how to fail).
   */
  public isDegraded(): Promise<boolean> {
    this.reading ??= this.read().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async read(): Promise<boolean> {
    try {
      const raw = await this.provider.get<string>(this.name, {
        maxAge: this.maxAgeSeconds,
        throwOnMissing: true,
      });
      return readDegradeFlag(typeof raw === 'string' ? raw : undefined).degraded;
    } catch (error) {
      if (error instanceof ParameterNotFoundError) return false;
      throw error;
    }
  }
}

/**
 * Reads the degrade flag through `read`; when it cannot be read, work goes on (not degraded) and
 * the failure is logged: refusing or deferring work on a misread flag could lose more than it saves.
 */
export async function degradedOrFalse(
  read: () => Promise<boolean>,
  logger: { warn(message: string, extra: { error: Error }): void },
): Promise<boolean> {
  try {
    return await read();
  } catch (error) {
    logger.warn('could not read the degrade flag; treating the stage as not degraded', {
      error: error as Error,
    });
    return false;
  }
}
