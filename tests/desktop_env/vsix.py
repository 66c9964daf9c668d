"""A minimal VS Code extension package (`.vsix`, an Open Packaging Conventions zip) made in-test: what
`code --install-extension FILE.vsix` installs without a marketplace."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="utf-8"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension=".json" ContentType="application/json"/>'
    '<Default Extension=".js" ContentType="application/javascript"/>'
    '<Default Extension=".vsixmanifest" ContentType="text/xml"/></Types>')

_MANIFEST = (
    '<?xml version="1.0" encoding="utf-8"?>'
    '<PackageManifest Version="2.0.0" xmlns="http://schemas.microsoft.com/developer/vsx-schema/2011">'
    '<Metadata><Identity Language="en-US" Id="{name}" Version="{version}" Publisher="{publisher}"/>'
    '<DisplayName>{name}</DisplayName><Description xml:space="preserve">{name}</Description></Metadata>'
    '<Installation><InstallationTarget Id="Microsoft.VisualStudio.Code"/></Installation>'
    '<Dependencies/><Assets>'
    '<Asset Type="Microsoft.VisualStudio.Code.Manifest" Path="extension/package.json" Addressable="true"/>'
    '</Assets></PackageManifest>')

#: An extension like OSWorld's evaluation helper (`vscodeEvalExtension`): its command "OpenProject"
#: writes the name of the window's first folder to ~/OpenProject.txt (the `vscode_config` getter
#: runs it from the command palette and reads the file).
OPEN_PROJECT_JS = """\
const vscode = require('vscode');
const fs = require('fs');
const os = require('os');
const path = require('path');
exports.activate = function (context) {
  context.subscriptions.push(vscode.commands.registerCommand('eval.OpenProject', function () {
    const folders = vscode.workspace.workspaceFolders || [];
    fs.writeFileSync(path.join(os.homedir(), 'OpenProject.txt'), folders.length ? folders[0].name : '');
  }));
};
"""


def write_open_project_vsix(path: Path, publisher: str = "cua-test", name: str = "eval",
                            version: str = "0.0.1") -> str:
    """Write the "OpenProject" extension as a `.vsix` at `path`; returns its id `publisher.name`."""
    package = {
        "name": name, "publisher": publisher, "version": version, "displayName": name,
        "engines": {"vscode": "^1.80.0"}, "main": "./extension.js",
        "activationEvents": ["onCommand:eval.OpenProject"],
        "contributes": {"commands": [{"command": "eval.OpenProject", "title": "OpenProject"}]},
    }
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", _CONTENT_TYPES)
        archive.writestr("extension.vsixmanifest", _MANIFEST.format(name=name, version=version, publisher=publisher))
        archive.writestr("extension/package.json", json.dumps(package, indent=2))
        archive.writestr("extension/extension.js", OPEN_PROJECT_JS)
    return f"{publisher}.{name}"
