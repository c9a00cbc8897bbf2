import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_WEBHOOK_URL_LENGTH, WebhookHosts, type WebhookUrlCheck } from '../../../src/workflow/allowed-hosts.ts';

function reasonOf(check: WebhookUrlCheck): string {
  assert.equal(check.ok, false, 'expected a refusal');
  return check.ok ? '' : check.reason;
}

function accepted(check: WebhookUrlCheck): string {
  assert.ok(check.ok, check.ok ? '' : check.reason);
  return check.ok ? check.url : '';
}

test('the list is comma-separated, trimmed, case-folded, with optional ports and bracketed IPv6', () => {
  const hosts = WebhookHosts.parse(' Hooks.Example.COM , 10.0.0.7:8443,[::1]:8080,, [0:0:0:0:0:0:0:2] ');
  assert.deepEqual(hosts.entries, [
    { host: 'hooks.example.com', port: null },
    { host: '10.0.0.7', port: 8443 },
    { host: '[::1]', port: 8080 },
    { host: '[::2]', port: null },
  ]);
  assert.deepEqual(hosts.rejected, []);
  assert.equal(hosts.empty, false);
});

test('entries that are no host are set aside and allow nothing', () => {
  const bad = [
    'http://a.example',
    'a b',
    'a.example:0',
    'a.example:65536',
    '*',
    '*.example.com',
    'user@a.example',
    '[zz]',
    '::1',
    'a.example:80:80',
    'a.example/path',
    'a.example:',
  ];
  const hosts = WebhookHosts.parse(bad.join(','));
  assert.deepEqual(hosts.entries, []);
  assert.deepEqual(hosts.rejected, bad);
  assert.equal(hosts.empty, true);
  assert.equal(hosts.check('http://a.example/').ok, false);
});

test('no list, an empty one or only commas refuses every webhook, saying so', () => {
  for (const text of [undefined, '', ' ', ' , ,']) {
    const hosts = WebhookHosts.parse(text);
    assert.equal(hosts.empty, true, String(text));
    const reason = reasonOf(hosts.check('https://hooks.example.com/x'));
    assert.match(reason, /^webhook_url /);
    assert.match(reason, /AUTH_WEBHOOK_ALLOWED_HOSTS/);
  }
});

test('an entry without a port allows any port; one with a port allows exactly it (defaults included)', () => {
  const hosts = WebhookHosts.parse('a.example,b.example:443,c.example:80,d.example:8080');
  for (const url of [
    'http://a.example/',
    'http://a.example:8080/',
    'https://a.example:1/',
    'https://b.example/',
    'https://b.example:443/x',
    'http://c.example/',
    'http://c.example:80/',
    'http://d.example:8080/',
  ]) {
    assert.equal(hosts.check(url).ok, true, url);
  }
  for (const url of [
    'http://b.example/',
    'https://b.example:8443/',
    'https://c.example/',
    'http://c.example:8080/',
    'http://d.example/',
    'https://d.example/',
    'http://e.example/',
  ]) {
    assert.match(reasonOf(hosts.check(url)), /^webhook_url must be on a host listed in AUTH_WEBHOOK_ALLOWED_HOSTS$/, url);
  }
});

test('host names compare case-insensitively and the URL comes back normalised', () => {
  const hosts = WebhookHosts.parse('HOOKS.example.com');
  assert.equal(accepted(hosts.check('HTTPS://Hooks.EXAMPLE.com:443/Path/To?q=A#frag')), 'https://hooks.example.com/Path/To?q=A#frag');
  assert.equal(accepted(hosts.check('  http://hooks.example.com  ')), 'http://hooks.example.com/');
  assert.equal(hosts.check('http://hooks.example.com.evil.test/').ok, false);
  assert.equal(hosts.check('http://evil.test/hooks.example.com').ok, false);
  assert.equal(hosts.check('http://evil.test?hooks.example.com').ok, false);
  assert.equal(hosts.check('http://sub.hooks.example.com/').ok, false);
});

test('spellings of one host match: IPv4 forms, IPv6 compression, international names', () => {
  const hosts = WebhookHosts.parse('127.0.0.1:9000,[0:0::1]:8080,bücher.example');
  assert.equal(accepted(hosts.check('http://2130706433:9000/')), 'http://127.0.0.1:9000/');
  assert.equal(accepted(hosts.check('http://0x7f.1:9000/')), 'http://127.0.0.1:9000/');
  assert.equal(accepted(hosts.check('http://[::1]:8080/x')), 'http://[::1]:8080/x');
  assert.equal(accepted(hosts.check('http://[0:0:0:0:0:0:0:1]:8080/')), 'http://[::1]:8080/');
  assert.equal(hosts.check('http://[::1]:8081/').ok, false);
  assert.equal(hosts.check('http://[::2]:8080/').ok, false);
  assert.equal(hosts.check('http://[::1]/').ok, false);
  assert.equal(accepted(hosts.check('https://BÜCHER.example/')), 'https://xn--bcher-kva.example/');
  assert.equal(hosts.check('https://xn--bcher-kva.example/').ok, true);
});

test('a user name or password is refused, without repeating it', () => {
  const hosts = WebhookHosts.parse('a.example');
  for (const url of ['http://user:s3cr3t-pw@a.example/', 'http://user@a.example/', 'https://:s3cr3t-pw@a.example/']) {
    const reason = reasonOf(hosts.check(url));
    assert.equal(reason, 'webhook_url must not contain a user name or password');
    assert.ok(!reason.includes('s3cr3t'));
  }
});

test('only absolute http and https URLs are accepted', () => {
  const hosts = WebhookHosts.parse('a.example');
  for (const url of ['ftp://a.example/', 'ws://a.example/', 'file:///etc/passwd', 'javascript:alert(1)', 'data:text/plain,a.example']) {
    assert.equal(reasonOf(hosts.check(url)), 'webhook_url must use the http or https scheme', url);
  }
  for (const url of ['', 'a.example', '/hook', '//a.example/x', 'http://', 'http://a b.example/', 'http://[::1/']) {
    assert.equal(reasonOf(hosts.check(url)), 'webhook_url must be an absolute http or https URL', url);
  }
  for (const value of [42, null, undefined, { url: 'http://a.example/' }]) {
    assert.equal(reasonOf(hosts.check(value)), 'webhook_url must be a string');
  }
});

test('at most 2048 characters, as given and once normalised', () => {
  const hosts = WebhookHosts.parse('a.example');
  const head = 'http://a.example/';
  const exact = head + 'x'.repeat(MAX_WEBHOOK_URL_LENGTH - head.length);
  assert.equal(exact.length, 2048);
  assert.equal(accepted(hosts.check(exact)), exact);
  assert.equal(reasonOf(hosts.check(`${exact}x`)), 'webhook_url must be at most 2048 characters');
  // Each space becomes %20 in the stored form: short enough as given, too long once normalised.
  const spaced = head + ' '.repeat(100) + 'x'.repeat(1900);
  assert.ok(spaced.length <= 2048);
  assert.equal(reasonOf(hosts.check(spaced)), 'webhook_url must be at most 2048 characters');
});

test('a refusal never repeats the URL (its path or query may hold a token)', () => {
  const hosts = WebhookHosts.parse('a.example');
  for (const url of ['http://b.example/hook?token=tok-123-secret', 'ftp://a.example/tok-123-secret', `http://a.example/tok-123-secret${'x'.repeat(3000)}`]) {
    assert.ok(!reasonOf(hosts.check(url)).includes('tok-123-secret'), url);
  }
});
