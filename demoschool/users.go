package demoschool

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"strings"
)

// OrgID is the organization every seeded person belongs to.
const OrgID = "demo-school"

// User is a person who can sign in to the school. Its JSON form is the
// session document of the backend contract.
type User struct {
	Sub   string   `json:"sub"`
	Email string   `json:"email"`
	Name  string   `json:"name"`
	OrgID string   `json:"org_id"`
	Roles []string `json:"roles"`

	salt []byte
	hash []byte
}

// Seeded people and their passwords. The passwords are published on
// purpose (the README and scripts/demo.sh print them); this is a demo.
var seedUsers = []struct {
	User
	password string
}{
	{User{Sub: "member-1", Email: "student@demo.school", Name: "Sam Student", Roles: []string{"student"}}, "student"},
	{User{Sub: "member-2", Email: "second@demo.school", Name: "Sky Second", Roles: []string{"student"}}, "student2"},
	{User{Sub: "operator-1", Email: "owner@demo.school", Name: "Olivia Owner", Roles: []string{"owner"}}, "owner"},
}

// pbkdf2Iterations is far below what a real password store needs; it keeps
// New and the login tests fast while still not keeping plain passwords.
const pbkdf2Iterations = 4096

func hashPassword(password string, salt []byte) []byte {
	key, err := pbkdf2.Key(sha256.New, password, salt, pbkdf2Iterations, 32)
	if err != nil {
		// Only reachable with a key length FIPS mode forbids; 32 is allowed.
		panic("demoschool: pbkdf2: " + err.Error())
	}
	return key
}

func newSalt() []byte {
	salt := make([]byte, 16)
	rand.Read(salt) // never fails since Go 1.24; it crashes the program instead
	return salt
}

// userDirectory is the read-only set of people, indexed both ways.
type userDirectory struct {
	bySub   map[string]*User
	byEmail map[string]*User
	// dummy is checked against when the e-mail is unknown, so a wrong e-mail
	// costs the same time as a wrong password.
	dummy User
}

func newUserDirectory() *userDirectory {
	d := &userDirectory{bySub: map[string]*User{}, byEmail: map[string]*User{}}
	for _, s := range seedUsers {
		u := s.User
		u.OrgID = OrgID
		u.Roles = append([]string(nil), s.Roles...)
		u.salt = newSalt()
		u.hash = hashPassword(s.password, u.salt)
		d.bySub[u.Sub] = &u
		d.byEmail[u.Email] = &u
	}
	d.dummy.salt = newSalt()
	d.dummy.hash = hashPassword("\x00not a password", d.dummy.salt)
	return d
}

// authenticate returns the user with the e-mail and password, or nil.
func (d *userDirectory) authenticate(email, password string) *User {
	u, known := d.byEmail[strings.ToLower(strings.TrimSpace(email))]
	candidate := u
	if !known {
		candidate = &d.dummy
	}
	ok := subtle.ConstantTimeCompare(hashPassword(password, candidate.salt), candidate.hash) == 1
	if !known || !ok {
		return nil
	}
	return u
}

// bySubject returns the user with the subject, or nil.
func (d *userDirectory) bySubject(sub string) *User {
	return d.bySub[sub]
}

// isOperator reports whether the user holds a role that makes a person a
// site operator under the backend contract.
func (u *User) isOperator() bool {
	for _, r := range u.Roles {
		switch r {
		case "owner", "admin", "operator":
			return true
		}
	}
	return false
}
