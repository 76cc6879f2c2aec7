// Attachments uploaded one by one to a draft, with progress: XMLHttpRequest, since fetch reports no
// upload progress. Each upload answers the new draft (a new uid and version).
import { Problem, csrfHeader, failureOf } from '../../shared/api.js';

/** Sends `file` to the draft; `progress` hears the share sent so far (0..1). */
export function uploadAttachment<T>(draft: { uid: string; version: number }, file: File, progress: (done: number) => void): Promise<T> {
  const query = new URLSearchParams({ filename: file.name, version: String(draft.version) });
  return new Promise<T>((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', `/api/mail/compose/${encodeURIComponent(draft.uid)}/attachments?${query}`);
    xhr.setRequestHeader('content-type', file.type || 'application/octet-stream');
    xhr.setRequestHeader('accept', 'application/json');
    for (const [k, v] of Object.entries(csrfHeader())) xhr.setRequestHeader(k, v);
    xhr.upload.onprogress = (e) => e.lengthComputable && progress(e.loaded / e.total);
    xhr.onerror = () => reject(new Problem('The upload was interrupted; check the connection and attach the file again'));
    xhr.onload = () => {
      let data: unknown = null;
      try {
        data = JSON.parse(xhr.responseText);
      } catch {
        data = null;
      }
      if (xhr.status >= 200 && xhr.status < 300) resolve(data as T);
      else void failureOf(xhr.status, data).then(reject);
    };
    xhr.send(file);
  });
}
