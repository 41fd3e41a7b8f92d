/**
 * Starts a whole local platform for a test file, on a moto of its own (a free port), so its
 * deployment never collides with the shared emulator other test files use.
 */
import { LocalPlatform, type PlatformOptions } from '../../lib/local/platform';
import { freePort } from '../../lib/local/ports';

export { freePort };

/**
 * Starts a platform on its own moto; `lines` collects what its functions print (`<function>: …`)
 * and what the platform itself logs (`[platform] …`: pollers, reconciler, alarms), in order.
 */
export async function startTestPlatform(
  opts: Partial<PlatformOptions> = {},
): Promise<{ platform: LocalPlatform; lines: string[] }> {
  const lines: string[] = [];
  // The integration setup points AWS_ENDPOINT_URL at the shared moto: this platform gets its own.
  delete process.env.AWS_ENDPOINT_URL;
  process.env.TENANG_MOTO_PORT = String(await freePort());
  const platform = await LocalPlatform.start({
    log: (line) => lines.push(`[platform] ${new Date().toISOString()} ${line}`),
    onFunctionOutput: (line, fn) => lines.push(`${fn}: ${line}`),
    reconcileEveryMs: 5_000,
    ...opts,
  });
  return { platform, lines };
}
