/**
 * Which app the local platform deploys (the working directory's nearest cdk.json, never tenang's
 * own copy in node_modules) and which cdk deploys it (the app's, else tenang's, else an error
 * naming the install command). Real directories in a scratch folder: the lookups read the disk.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { LocalEnvError } from '../../../lib/local/errors';
import {
  CDK_INSTALL_COMMAND,
  cdkCommand,
  findAppDirectory,
  localAppDirectory,
  tenangRoot,
} from '../../../lib/local/project';

describe('Module: lib/local/project', () => {
  let scratch: string;
  /** An app that installed tenang: its cdk.json, tenang under node_modules. */
  let app: string;
  let tenang: string;

  /** Creates `file` (and its directories) under scratch. */
  const touch = (file: string, text = ''): void => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
  };
  const cdkOf = (dir: string): string => path.join(dir, 'node_modules', '.bin', 'cdk');

  beforeEach(() => {
    // Prepare
    scratch = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-project-')));
    app = path.join(scratch, 'app');
    tenang = path.join(app, 'node_modules', 'tenang');
    touch(path.join(app, 'cdk.json'), '{"app":"npx tsx bin/app.ts"}');
    touch(path.join(app, 'package.json'), '{"name":"billing-app"}');
    touch(path.join(tenang, 'package.json'), '{"name":"tenang"}');
    fs.mkdirSync(path.join(tenang, 'dist', 'lib', 'local'), { recursive: true });
  });

  afterEach(() => {
    fs.rmSync(scratch, { recursive: true, force: true });
  });

  describe('Method: findAppDirectory / localAppDirectory', () => {
    it('when run in a subdirectory of the app, it finds the app (the nearest cdk.json above)', () => {
      // Prepare
      const sub = path.join(app, 'jobs', 'billing');
      fs.mkdirSync(sub, { recursive: true });

      // Act & Assess
      expect(findAppDirectory(sub)).toBe(app);
      expect(localAppDirectory(sub)).toBe(app);
    });

    it('when no cdk.json is at or above the directory, it says to run from the app', () => {
      // Prepare
      const elsewhere = path.join(scratch, 'elsewhere');
      fs.mkdirSync(elsewhere);

      // Act & Assess
      expect(findAppDirectory(elsewhere)).toBeUndefined();
      expect(() => localAppDirectory(elsewhere)).toThrow(LocalEnvError);
      expect(() => localAppDirectory(elsewhere)).toThrow(
        /no cdk\.json in .*elsewhere or above.*CDK app's directory/,
      );
    });
  });

  describe('Method: tenangRoot', () => {
    it("when the code runs from the installed package's dist/, it is the package, not dist/", () => {
      // Act & Assess
      expect(tenangRoot(path.join(tenang, 'dist', 'lib', 'local'))).toBe(tenang);
    });

    it("when the code runs from tenang's checkout, it is the checkout", () => {
      // Act & Assess
      expect(tenangRoot(path.join(__dirname, '..', '..', '..', 'lib', 'local'))).toBe(
        path.resolve(__dirname, '..', '..', '..'),
      );
    });
  });

  describe('Method: cdkCommand', () => {
    it("when the app has its own cdk, it is the app's (even when tenang has one)", () => {
      // Prepare
      touch(cdkOf(app));
      touch(cdkOf(tenang));

      // Act & Assess
      expect(cdkCommand(app, tenang)).toBe(cdkOf(app));
    });

    it("when only tenang's install has a cdk, it is tenang's", () => {
      // Prepare
      touch(cdkOf(tenang));

      // Act & Assess
      expect(cdkCommand(app, tenang)).toBe(cdkOf(tenang));
    });

    it('when neither has one, the error names both places and the install command', () => {
      // Act
      let error: unknown;
      try {
        cdkCommand(app, tenang);
      } catch (e) {
        error = e;
      }

      // Assess
      expect(error).toBeInstanceOf(LocalEnvError);
      const message = (error as Error).message;
      expect(message).toContain(cdkOf(app));
      expect(message).toContain(cdkOf(tenang));
      expect(message).toContain(CDK_INSTALL_COMMAND);
      expect(CDK_INSTALL_COMMAND).toBe('npm install -D aws-cdk');
    });
  });
});
