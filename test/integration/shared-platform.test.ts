/**
 * The platform suites that use a local platform without changing what it is, one after another on
 * one platform (test/helpers/shared-platform.ts): the live audit first, since it checks the stack
 * as deployed before anything has run on it, then the CLI, the stream DLQ replay and the platform's
 * own end-to-end tests. Each suite is in its own module (`*.suite.ts`) and works on orders,
 * messages and flags of its own.
 */
import { useSharedPlatform } from '../helpers/shared-platform';
import { describeAuditLive } from './audit-live.suite';
import { describeCli } from './cli.suite';
import { describeCliStreamReplay } from './cli-stream-replay.suite';
import { describeLocalPlatform } from './local-platform.suite';

// The longest any of the suites allows one test (the stream replay waits out the relay's retries).
jest.setTimeout(300_000);

const shared = useSharedPlatform();
describeAuditLive(shared);
describeCli(shared);
describeCliStreamReplay(shared);
describeLocalPlatform(shared);
