/**
 * `tenang` as a user first runs it: a child process (`tsx bin/tenang.ts status --stage dev`)
 * in an environment of its own, without AWS credentials or with an expired session token. It
 * must say what is wrong and how to fix it, exit 3 (lib/ops/cli-errors.ts), print no stack
 * trace, and not print the SDK's Node.js version notice. Needs no emulator: the SDK gives up
 * before sending a request, and the expired token is answered by a local stand-in for AWS.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { EXIT_CODE } from '../../lib/ops/cli-errors';
import { startTokenErrorServer, type TokenErrorServer } from '../helpers/aws-token-errors';
import { runTenang as tenang } from '../helpers/cli-process';

jest.setTimeout(60_000);

const NODE_NOTICE = 'NodeVersionSupportWarning';
const STACK_FRAME = /^\s+at .+[(:]/m;

describe('CLI: tenang without usable AWS credentials (a child process)', () => {
  let home: string;
  /** No credentials anywhere: no variables, empty config and credentials files, no instance metadata. */
  let bare: Record<string, string>;

  beforeAll(() => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-nocreds-'));
    const config = path.join(home, 'config');
    const credentials = path.join(home, 'credentials');
    fs.writeFileSync(config, '');
    fs.writeFileSync(credentials, '');
    bare = {
      HOME: home,
      AWS_CONFIG_FILE: config,
      AWS_SHARED_CREDENTIALS_FILE: credentials,
      AWS_EC2_METADATA_DISABLED: 'true',
      AWS_REGION: 'us-east-1',
    };
  });

  afterAll(() => {
    fs.rmSync(home, { recursive: true, force: true });
  });

  it('when no credentials are configured, it says how to provide them and exits 3 without a stack trace', async () => {
    // Act
    const ran = await tenang(['status', '--stage', 'dev'], bare);

    // Assess
    expect({ code: ran.code, stdout: ran.stdout }).toEqual({ code: EXIT_CODE.credentials, stdout: '' });
    expect(ran.stderr.split('\n')[0]).toBe(
      'error: no AWS credentials found: CredentialsProviderError: Could not load credentials from any providers',
    );
    for (const remedy of ['aws configure', 'export AWS_PROFILE=', 'aws sso login', 'npm run local -- up'])
      expect(ran.stderr).toContain(remedy);
    expect(ran.stderr).not.toMatch(STACK_FRAME);
    expect(ran.stderr).not.toContain('unexpected error');
    expect(ran.stderr).not.toContain(NODE_NOTICE);
  });

  describe('with an expired session token', () => {
    let server: TokenErrorServer;

    beforeAll(async () => {
      // AWS's answer to a request signed with an expired session token (CloudFormation: ExpiredToken).
      server = await startTokenErrorServer();
    });

    afterAll(async () => {
      await server.close();
    });

    it('when AWS answers ExpiredToken, it says the credentials expired and how to refresh them, and exits 3', async () => {
      // Act
      const ran = await tenang(['status', '--stage', 'dev'], {
        ...bare,
        AWS_ENDPOINT_URL: server.endpoint,
        AWS_ACCESS_KEY_ID: 'ASIAEXAMPLEEXAMPLE',
        AWS_SECRET_ACCESS_KEY: 'secret',
        AWS_SESSION_TOKEN: 'expired-token',
      });

      // Assess
      expect(ran.code).toBe(EXIT_CODE.credentials);
      expect(ran.stderr.split('\n')[0]).toBe(
        'error: the AWS credentials have expired (from AWS_ACCESS_KEY_ID with AWS_SESSION_TOKEN (temporary credentials)): ExpiredToken: The security token included in the request is expired',
      );
      expect(ran.stderr).toContain('aws sso login');
      expect(ran.stderr).not.toMatch(STACK_FRAME);
      expect(ran.stderr).not.toContain(NODE_NOTICE);
    });
  });

  (Number(process.versions.node.split('.')[0]) < 22 ? it : it.skip)(
    'when the user asks for the SDK notice (variable set to "false"), it is printed: the checks above can fail',
    async () => {
      // Act
      const ran = await tenang(['status', '--stage', 'dev'], {
        ...bare,
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'false',
      });

      // Assess
      expect(ran.code).toBe(EXIT_CODE.credentials);
      expect(ran.stderr).toContain(NODE_NOTICE);
    },
  );
});
