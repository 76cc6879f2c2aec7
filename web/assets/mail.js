// Web mail: mailboxes, folders, the messages of a folder, and the reader (text body; sanitized HTML
// shown as text; S/MIME ciphertext is never sent to the server for decryption).
import { api, h, start, when } from './app.js';

start(async (el) => {
  const boxes = await api('/api/mail/mailboxes?limit=100');
  if (!boxes.length) {
    el.replaceChildren(h('p', { class: 'notice' }, 'You have no mailbox yet. An administrator creates one for you.'));
    return;
  }
  const folderPane = h('div', { class: 'pane' });
  const listPane = h('div', { class: 'pane' });
  const reader = h('div', { class: 'pane reader' }, h('p', { class: 'muted' }, 'Select a message.'));
  const picker =
    boxes.length > 1
      ? h(
          'select',
          { 'aria-label': 'Mailbox', onchange: (e) => openMailbox(e.target.value) },
          boxes.map((b) => h('option', { value: b.uid }, b.address)),
        )
      : null;
  el.replaceChildren(...(picker ? [h('p', {}, picker)] : []), h('div', { class: 'columns' }, folderPane, listPane, reader));

  async function openMailbox(mailboxUid) {
    const folders = await api(`/api/mail/folders?mailboxUid=${encodeURIComponent(mailboxUid)}&limit=1000`);
    const items = folders.map((f) =>
      h(
        'li',
        { role: 'option', 'data-folder': f.uid, onclick: () => openFolder(f, items) },
        f.name,
        f.unreadCount ? h('span', { class: 'badge' }, f.unreadCount) : null,
      ),
    );
    folderPane.replaceChildren(h('ul', { class: 'list', role: 'listbox', 'aria-label': 'Folders' }, items));
    const inbox = folders.find((f) => f.role === 'inbox') ?? folders[0];
    if (inbox) await openFolder(inbox, items);
  }

  async function openFolder(folder, items) {
    for (const li of items) li.setAttribute('aria-selected', String(li.dataset.folder === folder.uid));
    const messages = await api(`/api/mail/messages?folderUid=${encodeURIComponent(folder.uid)}&limit=100&sort=-date`);
    const rows = messages.map((m) =>
      h(
        'li',
        { role: 'option', class: m.seen ? '' : 'unread', 'data-message': m.uid, onclick: () => openMessage(m, rows) },
        h('div', {}, m.from?.name || m.fromAddress || '(no sender)'),
        h('div', {}, m.subject || '(no subject)'),
        h('div', { class: 'muted' }, when(m.date)),
      ),
    );
    listPane.replaceChildren(
      rows.length
        ? h('ul', { class: 'list', role: 'listbox', 'aria-label': 'Messages' }, rows)
        : h('p', { class: 'muted reader' }, 'No messages.'),
    );
  }

  async function openMessage(m, rows) {
    for (const li of rows) li.setAttribute('aria-selected', String(li.dataset.message === m.uid));
    const body = await api(`/api/mail/messages/${encodeURIComponent(m.uid)}/body`);
    let text;
    if (body.encrypted) text = 'This message is encrypted end to end. Open it in a client that holds your key.';
    else if (body.text) text = body.text;
    else if (body.html) text = new DOMParser().parseFromString(body.html, 'text/html').body.textContent ?? '';
    else text = '';
    reader.replaceChildren(
      h('h2', {}, m.subject || '(no subject)'),
      h('p', { class: 'muted' }, `${m.from?.name ? `${m.from.name} <${m.fromAddress}>` : m.fromAddress} · ${when(m.date)}`),
      h('div', { class: 'message-text' }, text),
    );
    if (!m.seen) {
      const updated = await api(`/api/mail/messages/${encodeURIComponent(m.uid)}/seen`, {
        method: 'PUT',
        body: { value: true, version: m.version },
      });
      Object.assign(m, updated);
      rows.find((li) => li.dataset.message === m.uid)?.classList.remove('unread');
    }
  }

  await openMailbox(boxes[0].uid);
});
