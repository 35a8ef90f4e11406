// Package network runs several labs side by side on the same tasks and
// seeds and moves what they learn between them at a diffusion barrier: the
// topology says which lab may send to which, the treatment (none,
// broadcast, mediated) what is sent. Items travel through files in the
// experiment directory and enter a receiving lab only as proposals for its
// own Advisor and validation gate. See docs/network.md.
package network
